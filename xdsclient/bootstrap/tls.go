package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
)

// DefaultTLSRefreshInterval is how often the files of "tls" channel
// credentials are read again when the config has no "refresh_interval"
// (gRFC A65).
const DefaultTLSRefreshInterval = 10 * time.Minute

// tlsSettings is the config of "tls" channel credentials (gRFC A65).
type tlsSettings struct {
	files   tlsFiles
	refresh time.Duration
}

// tlsFiles names the PEM files of "tls" channel credentials. Empty names are
// not set.
type tlsFiles struct {
	ca, cert, key string
}

// parseTLSConfig validates the config object of "tls" channel credentials
// found at path. An absent config is the same as an empty one.
func parseTLSConfig(path string, raw json.RawMessage) (tlsSettings, error) {
	set := tlsSettings{refresh: DefaultTLSRefreshInterval}
	if k := kindOf(raw); k == kindInvalid || k == kindNull {
		return set, nil
	}
	o, err := asObject(path, raw)
	if err != nil {
		return set, err
	}
	if set.files.ca, _, err = o.str("ca_certificate_file"); err != nil {
		return set, err
	}
	if set.files.cert, _, err = o.str("certificate_file"); err != nil {
		return set, err
	}
	if set.files.key, _, err = o.str("private_key_file"); err != nil {
		return set, err
	}
	switch {
	case set.files.cert != "" && set.files.key == "":
		return set, errAt(o.at("private_key_file"), "must be set because certificate_file is %s", quote(set.files.cert))
	case set.files.key != "" && set.files.cert == "":
		return set, errAt(o.at("certificate_file"), "must be set because private_key_file is %s", quote(set.files.key))
	}
	if raw, ok := o.get("refresh_interval"); ok {
		if set.refresh, err = parseDuration(o.at("refresh_interval"), raw); err != nil {
			return set, err
		}
	}
	return set, nil
}

// parseDuration reads a positive duration in the JSON form of
// google.protobuf.Duration, such as "600s" or "1.5s".
func parseDuration(path string, raw json.RawMessage) (time.Duration, error) {
	if kindOf(raw) != kindString {
		return 0, wrongType(path, `a duration string such as "600s"`, raw)
	}
	var d durationpb.Duration
	if err := protojson.Unmarshal(raw, &d); err != nil {
		return 0, errAt(path, `%s is not a duration such as "600s"`, show(raw))
	}
	if dur := d.AsDuration(); dur > 0 {
		return dur, nil
	}
	return 0, errAt(path, "%s is not positive", show(raw))
}

// TransportCredentials returns the credentials for a channel to the server,
// built from SelectedCreds:
//
//   - "insecure": no security at all.
//   - "tls" (gRFC A65): TLS with the server's certificate checked against the
//     CAs in "ca_certificate_file", or against the system roots when that
//     is not set; with "certificate_file" and "private_key_file" set, the
//     client also presents that certificate. The files are read now, and
//     an error names the file and the cause. They are read again at the
//     first handshake after each "refresh_interval" (default 600s); when
//     they cannot be read then, the credentials go on using the last good
//     files.
//
// Other types give an error, "google_default" too: its credentials are a
// bundle of transport and per-RPC credentials, which [ServerConfig.DialOptions]
// builds.
func (s *ServerConfig) TransportCredentials() (credentials.TransportCredentials, error) {
	tc, err := s.transportCredentials()
	return tc, bounded(err)
}

func (s *ServerConfig) transportCredentials() (credentials.TransportCredentials, error) {
	switch s.SelectedCreds.Type {
	case CredsInsecure:
		return insecure.NewCredentials(), nil
	case CredsTLS:
		set, err := parseTLSConfig("config", s.SelectedCreds.Config)
		if err != nil {
			return nil, fmt.Errorf("server %s: tls channel creds: %w", quote(s.ShownURI()), err)
		}
		c, err := newTLSCreds(set, time.Now)
		if err != nil {
			return nil, fmt.Errorf("server %s: tls channel creds: %w", quote(s.ShownURI()), err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("server %s: channel creds type %s is not supported", quote(s.ShownURI()), quote(s.SelectedCreds.Type))
	}
}

// newTLSCreds loads the files of set and returns credentials that reload
// them every set.refresh, reading the time from now.
func newTLSCreds(set tlsSettings, now func() time.Time) (credentials.TransportCredentials, error) {
	if set.files == (tlsFiles{}) {
		return credentials.NewTLS(&tls.Config{}), nil
	}
	cfg, err := set.files.load()
	if err != nil {
		return nil, err
	}
	return &reloadingCreds{
		files:    set.files,
		refresh:  set.refresh,
		now:      now,
		cfg:      cfg,
		loadedAt: now(),
	}, nil
}

// load reads the files into a client TLS config.
func (f tlsFiles) load() (*tls.Config, error) {
	cfg := &tls.Config{}
	if f.ca != "" {
		pem, err := readFile("ca_certificate_file", f.ca)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_certificate_file %s: no PEM certificate found", quote(f.ca))
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.cert != "" && f.key != "":
		certPEM, err := readFile("certificate_file", f.cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readFile("private_key_file", f.key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("certificate_file %s with private_key_file %s: %w", quote(f.cert), quote(f.key), err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case f.cert != "":
		return nil, fmt.Errorf("certificate_file %s is set without private_key_file", quote(f.cert))
	case f.key != "":
		return nil, fmt.Errorf("private_key_file %s is set without certificate_file", quote(f.key))
	}
	return cfg, nil
}

// readFile reads the file name given by the config key. Its error names the
// key, the file and the cause, once.
func readFile(key, name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s %s: %s: %w", key, quote(name), pe.Op, pe.Err)
		}
		return nil, fmt.Errorf("%s %s: %w", key, quote(name), err)
	}
	return b, nil
}

// reloadingCreds are client TLS credentials whose CA and key pair are read
// again from their files at the first handshake after each refresh period.
type reloadingCreds struct {
	files   tlsFiles
	refresh time.Duration
	now     func() time.Time

	mu         sync.Mutex
	cfg        *tls.Config // from the last good read of the files
	loadedAt   time.Time   // when the files were last read, good or not
	serverName string      // set by OverrideServerName
}

// current returns the TLS config for one handshake, reading the files first
// when the refresh period has passed, and the server name override.
func (c *reloadingCreds) current() (*tls.Config, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now(); t.Sub(c.loadedAt) >= c.refresh {
		if cfg, err := c.files.load(); err == nil {
			c.cfg = cfg
		}
		c.loadedAt = t
	}
	return c.cfg, c.serverName
}

// ClientHandshake does the TLS handshake as a client, with the files as of
// now.
func (c *reloadingCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cfg, serverName := c.current()
	if serverName != "" {
		authority = serverName
	}
	return credentials.NewTLS(cfg).ClientHandshake(ctx, authority, conn)
}

// ServerHandshake always fails: these credentials are for clients only.
func (c *reloadingCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("xds bootstrap tls channel creds: server handshakes are not supported")
}

// Info describes the protocol.
func (c *reloadingCreds) Info() credentials.ProtocolInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2", ServerName: c.serverName}
}

// Clone returns independent credentials that start from the same state.
func (c *reloadingCreds) Clone() credentials.TransportCredentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &reloadingCreds{
		files:      c.files,
		refresh:    c.refresh,
		now:        c.now,
		cfg:        c.cfg,
		loadedAt:   c.loadedAt,
		serverName: c.serverName,
	}
}

// OverrideServerName makes later handshakes check the server's certificate
// against name instead of the authority.
//
// Deprecated: kept only to satisfy credentials.TransportCredentials.
func (c *reloadingCreds) OverrideServerName(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverName = name
	return nil
}
