package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/google"
	"google.golang.org/grpc/credentials/jwt"
	"google.golang.org/grpc/credentials/oauth"
)

// CredsGoogleDefault is the "google_default" channel credentials type of
// gRFC A27: Google's default credentials bundle, TLS (or ALTS on Google
// Cloud) with an OAuth token from the Application Default Credentials on
// every RPC.
const CredsGoogleDefault = "google_default"

// CallCredsJWTTokenFile is the "jwt_token_file" call credentials type of
// gRFC A97: a JWT read from the file named by the config's
// "jwt_token_file", sent as "authorization: Bearer <token>" on every RPC
// to the server.
const CallCredsJWTTokenFile = "jwt_token_file"

// EnvCallCreds set to "true" makes the "call_creds" of xds_servers entries
// count (gRFC A97 guards them with this variable, as gRPC does). When it
// is not, "call_creds" is ignored, unchecked.
const EnvCallCreds = "GRPC_EXPERIMENTAL_XDS_BOOTSTRAP_CALL_CREDS"

// googleScope is the OAuth scope of the google_default credentials.
const googleScope = "https://www.googleapis.com/auth/cloud-platform"

// CallCreds is one supported entry of a server's "call_creds" list.
type CallCreds struct {
	// Type is the call credentials type, CallCredsJWTTokenFile.
	Type string
	// Config is the "config" object exactly as written.
	Config json.RawMessage
	// JWTTokenFile is the config's "jwt_token_file".
	JWTTokenFile string
}

func callCredsEnabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv(EnvCallCreds)), "true")
}

// parseCallCreds reads "call_creds" of the server object o (gRFC A97):
// every entry of a supported type is kept, other types are skipped, and a
// supported entry with a bad config is an error. Call credentials send a
// token, so they need a channel with transport security: with "insecure"
// channel credentials they are an error here rather than a failure to
// connect later.
func (s *ServerConfig) parseCallCreds(o object) error {
	if !callCredsEnabled() {
		return nil
	}
	path := o.at("call_creds")
	entries, _, err := o.arr("call_creds")
	if err != nil {
		return err
	}
	for i, raw := range entries {
		entry, typ, config, err := parseCredsEntry(joinIndex(path, i), raw)
		if err != nil {
			return err
		}
		if typ != CallCredsJWTTokenFile {
			continue
		}
		if config == nil {
			return errAt(entry.at("config"), "missing: type %q needs jwt_token_file", typ)
		}
		cfg, err := asObject(entry.at("config"), config)
		if err != nil {
			return err
		}
		file, ok, err := cfg.str("jwt_token_file")
		switch {
		case err != nil:
			return err
		case !ok:
			return errAt(cfg.at("jwt_token_file"), "missing")
		case file == "":
			return errAt(cfg.at("jwt_token_file"), "empty")
		}
		if s.SelectedCreds.Type == CredsInsecure {
			return errAt(joinIndex(path, i), "type %q sends a token and needs transport security, which channel_creds type %q does not give", typ, CredsInsecure)
		}
		s.CallCreds = append(s.CallCreds, CallCreds{Type: typ, Config: config, JWTTokenFile: file})
	}
	return nil
}

// DialOptions returns the dial options that secure a channel to the
// server: its channel credentials (see TransportCredentials; for
// "google_default", Google's default credentials bundle), and a per-RPC
// credential for each of CallCreds. Errors name the server and the
// credentials type. "google_default" needs Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application_default_credentials.json, or the metadata server of Google
// Cloud); without them it is an error that says so.
func (s *ServerConfig) DialOptions() ([]grpc.DialOption, error) {
	opts, err := s.dialOptions()
	return opts, bounded(err)
}

func (s *ServerConfig) dialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if s.SelectedCreds.Type == CredsGoogleDefault {
		// The context carries the token requests of the credentials for
		// as long as they live: it must not end.
		adc, err := oauth.NewApplicationDefault(context.Background(), googleScope)
		if err != nil {
			return nil, fmt.Errorf("server %s: channel creds type %q cannot be used: no Google Application Default Credentials: %w", quote(s.ShownURI()), CredsGoogleDefault, err)
		}
		bundle := google.NewDefaultCredentialsWithOptions(google.DefaultCredentialsOptions{PerRPCCreds: adc})
		if bundle == nil || bundle.TransportCredentials() == nil {
			return nil, fmt.Errorf("server %s: channel creds type %q cannot be used: the Google credentials bundle could not be made", quote(s.ShownURI()), CredsGoogleDefault)
		}
		opts = append(opts, grpc.WithCredentialsBundle(bundle))
	} else {
		tc, err := s.transportCredentials()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(tc))
	}
	for _, cc := range s.CallCreds {
		creds, err := jwt.NewTokenFileCallCredentials(cc.JWTTokenFile)
		if err != nil {
			return nil, fmt.Errorf("server %s: call creds type %s: %w", quote(s.ShownURI()), quote(cc.Type), err)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(creds))
	}
	return opts, nil
}
