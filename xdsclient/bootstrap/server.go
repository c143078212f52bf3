package bootstrap

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Channel credentials types that this package can build (see
// [ServerConfig.DialOptions]), with [CredsGoogleDefault].
const (
	// CredsInsecure is the "insecure" type: plaintext, no authentication.
	CredsInsecure = "insecure"
	// CredsTLS is the "tls" type of gRFC A65.
	CredsTLS = "tls"
)

// Server features, the strings of a server's "server_features" list that
// this package gives a meaning to.
const (
	// FeatureIgnoreResourceDeletion asks the client not to drop a Listener
	// or Cluster that the server deletes (gRFC A53). Under gRFC A88 data
	// error handling it has no effect.
	FeatureIgnoreResourceDeletion = "ignore_resource_deletion"
	// FeatureFailOnDataErrors asks the client to drop a cached resource when
	// the server reports a data error for it (gRFC A88).
	FeatureFailOnDataErrors = "fail_on_data_errors"
	// FeatureResourceTimerIsTransientError makes a resource that does not
	// arrive in time a transient error rather than a deletion, with a longer
	// timer (gRFC A88).
	FeatureResourceTimerIsTransientError = "resource_timer_is_transient_error"
	// FeatureTrustedXDSServer marks a server as trusted with settings that
	// affect security (gRFC A81).
	FeatureTrustedXDSServer = "trusted_xds_server"
	// FeatureDeltaXDS asks the client to speak incremental xDS to the
	// server (the DeltaAggregatedResources stream) instead of State of the
	// World. gRPC's own clients ignore it, as they ignore every feature they
	// do not know, and speak State of the World.
	FeatureDeltaXDS = "delta_xds"
)

// ChannelCreds is one entry of a server's "channel_creds" list.
type ChannelCreds struct {
	// Type is the credentials type, such as "insecure" or "tls".
	Type string
	// Config is the "config" object exactly as written, or nil when absent.
	Config json.RawMessage
}

// ServerConfig is one xDS management server: an entry of "xds_servers", at
// the top level or in an authority.
type ServerConfig struct {
	// URI is "server_uri", the gRPC target of the server. Never empty.
	URI string
	// ChannelCreds is every "channel_creds" entry, in order, supported or
	// not.
	ChannelCreds []ChannelCreds
	// SelectedCreds is the first entry of ChannelCreds whose type is
	// supported ([CredsInsecure], [CredsTLS] or [CredsGoogleDefault]); the
	// client uses it.
	SelectedCreds ChannelCreds
	// ServerFeatures is every string of "server_features", in order; other
	// entries are left out.
	ServerFeatures []string
	// CallCreds are the "call_creds" entries of a supported type (gRFC
	// A97), in order; the client uses all of them. Always empty unless
	// the environment variable EnvCallCreds is "true".
	CallCreds []CallCreds

	// IgnoreResourceDeletion reports [FeatureIgnoreResourceDeletion].
	IgnoreResourceDeletion bool
	// FailOnDataErrors reports [FeatureFailOnDataErrors].
	FailOnDataErrors bool
	// ResourceTimerIsTransientError reports
	// [FeatureResourceTimerIsTransientError].
	ResourceTimerIsTransientError bool
	// TrustedXDSServer reports [FeatureTrustedXDSServer].
	TrustedXDSServer bool
	// DeltaXDS reports [FeatureDeltaXDS].
	DeltaXDS bool
}

// ParseServerConfig parses one server object, as found in "xds_servers" or
// as the xDS server in a load balancing policy config (gRFC A47).
func ParseServerConfig(data []byte) (*ServerConfig, error) {
	raw, err := validJSON(data)
	if err != nil {
		return nil, bounded(fmt.Errorf("xds server config: %w", err))
	}
	s, err := parseServer("", raw)
	if err != nil {
		return nil, bounded(fmt.Errorf("xds server config: %w", err))
	}
	return s, nil
}

// parseServer parses the server object raw found at path.
func parseServer(path string, raw json.RawMessage) (*ServerConfig, error) {
	o, err := asObject(path, raw)
	if err != nil {
		return nil, err
	}
	s := &ServerConfig{}
	uri, ok, err := o.str("server_uri")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errAt(o.at("server_uri"), "missing")
	case uri == "":
		return nil, errAt(o.at("server_uri"), "empty")
	}
	s.URI = uri

	if err := s.parseCreds(o); err != nil {
		return nil, err
	}
	if err := s.parseCallCreds(o); err != nil {
		return nil, err
	}

	features, _, err := o.arr("server_features")
	if err != nil {
		return nil, err
	}
	for _, f := range features {
		if kindOf(f) != kindString {
			continue
		}
		name, err := asString(o.at("server_features"), f)
		if err != nil {
			return nil, err
		}
		s.ServerFeatures = append(s.ServerFeatures, name)
		switch name {
		case FeatureIgnoreResourceDeletion:
			s.IgnoreResourceDeletion = true
		case FeatureFailOnDataErrors:
			s.FailOnDataErrors = true
		case FeatureResourceTimerIsTransientError:
			s.ResourceTimerIsTransientError = true
		case FeatureTrustedXDSServer:
			s.TrustedXDSServer = true
		case FeatureDeltaXDS:
			s.DeltaXDS = true
		}
	}
	return s, nil
}

// parseCreds reads "channel_creds" of the server object o and selects the
// first supported entry.
func (s *ServerConfig) parseCreds(o object) error {
	path := o.at("channel_creds")
	entries, ok, err := o.arr("channel_creds")
	switch {
	case err != nil:
		return err
	case !ok:
		return errAt(path, "missing")
	case len(entries) == 0:
		return errAt(path, "empty")
	}
	selected := false
	types := make([]string, 0, len(entries))
	for i, raw := range entries {
		entry, typ, config, err := parseCredsEntry(joinIndex(path, i), raw)
		if err != nil {
			return err
		}
		cc := ChannelCreds{Type: typ, Config: config}
		s.ChannelCreds = append(s.ChannelCreds, cc)
		types = append(types, typ)
		if selected || !supportedCreds(typ) {
			continue
		}
		if typ == CredsTLS {
			if _, err := parseTLSConfig(entry.at("config"), config); err != nil {
				return err
			}
		}
		s.SelectedCreds = cc
		selected = true
	}
	if !selected {
		return errAt(path, "no supported type among %s", quoteList(types))
	}
	return nil
}

// parseCredsEntry reads one entry of a "channel_creds" or "call_creds"
// list, found at path: an object with a string "type" and, optionally, an
// object "config" (nil when absent).
func parseCredsEntry(path string, raw json.RawMessage) (entry object, typ string, config json.RawMessage, err error) {
	if entry, err = asObject(path, raw); err != nil {
		return entry, "", nil, err
	}
	if typ, _, err = entry.str("type"); err != nil {
		return entry, "", nil, err
	}
	config, hasConfig := entry.get("config")
	if hasConfig && kindOf(config) != kindObject {
		return entry, "", nil, wrongType(entry.at("config"), "a JSON object", config)
	}
	return entry, typ, config, nil
}

func supportedCreds(typ string) bool {
	return typ == CredsInsecure || typ == CredsTLS || typ == CredsGoogleDefault
}

// Key identifies the server for de-duplication (gRFC A47): servers with
// equal keys share one channel and one ADS stream. It is made of URI, the
// type and the canonical JSON of SelectedCreds.Config (an absent config
// counts as {}), and the features this package knows, as given by the
// feature fields, sorted, and, when there are any, the CallCreds (type and
// canonical config). Unknown features, and channel_creds entries other
// than the selected one, do not count. Equal servers listed in different
// places of a bootstrap have equal keys.
func (s *ServerConfig) Key() string {
	features := make([]string, 0, 5)
	if s.DeltaXDS {
		features = append(features, FeatureDeltaXDS)
	}
	if s.FailOnDataErrors {
		features = append(features, FeatureFailOnDataErrors)
	}
	if s.IgnoreResourceDeletion {
		features = append(features, FeatureIgnoreResourceDeletion)
	}
	if s.ResourceTimerIsTransientError {
		features = append(features, FeatureResourceTimerIsTransientError)
	}
	if s.TrustedXDSServer {
		features = append(features, FeatureTrustedXDSServer)
	}
	slices.Sort(features)
	parts := []any{
		s.URI,
		s.SelectedCreds.Type,
		json.RawMessage(canonicalJSON(s.SelectedCreds.Config)),
		features,
	}
	for _, cc := range s.CallCreds {
		parts = append(parts, cc.Type, json.RawMessage(canonicalJSON(cc.Config)))
	}
	key, err := json.Marshal(parts)
	if err != nil {
		// Only a hand-built config that is not JSON gets here.
		key, _ = json.Marshal([]any{s.URI, s.SelectedCreds.Type, string(s.SelectedCreds.Config), features})
	}
	return string(key)
}

// String returns the server URI as shown: [ServerConfig.ShownURI].
func (s *ServerConfig) String() string {
	return s.ShownURI()
}
