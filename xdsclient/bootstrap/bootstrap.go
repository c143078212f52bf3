package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
)

// Environment variables that [FromEnv] reads.
const (
	// EnvBootstrapFile names the bootstrap file. It takes precedence over
	// EnvBootstrapConfig.
	EnvBootstrapFile = "GRPC_XDS_BOOTSTRAP"
	// EnvBootstrapConfig holds the bootstrap JSON itself. It is used only
	// when EnvBootstrapFile is unset or empty.
	EnvBootstrapConfig = "GRPC_XDS_BOOTSTRAP_CONFIG"
)

// ErrNoBootstrap is returned by [FromEnv] when neither environment variable
// is set.
var ErrNoBootstrap = errors.New("xds bootstrap: neither " + EnvBootstrapFile + " nor " + EnvBootstrapConfig + " is set")

// DefaultClientListenerResourceNameTemplate is the value of
// [Config.ClientDefaultListenerResourceNameTemplate] when the bootstrap does
// not set it: the Listener name is the target's host, unchanged.
const DefaultClientListenerResourceNameTemplate = "%s"

// Config is a parsed bootstrap.
type Config struct {
	// Servers is the top-level "xds_servers", in bootstrap order, which is
	// their priority order (gRFC A71): the first is the primary. Never
	// empty.
	Servers []*ServerConfig
	// Node is "node", the identity sent to the servers. It is never nil;
	// it is empty when the bootstrap has no node. Only id, cluster,
	// locality and metadata are read from the bootstrap: the user agent,
	// client features and build version are the client's to set.
	Node *corev3.Node
	// Authorities is "authorities" (gRFC A47), keyed by authority name; the
	// name "" is allowed and serves xdstp:/// names. Nil when absent.
	Authorities map[string]*Authority
	// ClientDefaultListenerResourceNameTemplate is
	// "client_default_listener_resource_name_template": the Listener name
	// for a client target without an authority, with "%s" standing for the
	// target's host. It is [DefaultClientListenerResourceNameTemplate] when
	// the bootstrap leaves it out or empty.
	ClientDefaultListenerResourceNameTemplate string
	// ServerListenerResourceNameTemplate is
	// "server_listener_resource_name_template": the Listener name for an
	// xDS-enabled server, with "%s" standing for its listening address. It
	// has no default.
	ServerListenerResourceNameTemplate string
	// CertificateProviders is "certificate_providers" (gRFC A29), keyed by
	// instance name. Nil when absent.
	CertificateProviders map[string]CertificateProvider
}

// Authority is one entry of "authorities" (gRFC A47).
type Authority struct {
	// Name is the authority's key in "authorities".
	Name string
	// ClientListenerResourceNameTemplate is the Listener name for a client
	// target naming this authority, with "%s" standing for the target's
	// host. It starts with "xdstp://<authority>/", the authority
	// percent-encoded. When the bootstrap leaves it out or empty it is
	// "xdstp://<authority>/envoy.config.listener.v3.Listener/%s".
	ClientListenerResourceNameTemplate string
	// Servers is the authority's "xds_servers" in priority order, or nil
	// when the authority lists none: then the top-level servers apply.
	Servers []*ServerConfig
}

// CertificateProvider is one entry of "certificate_providers" (gRFC A29).
type CertificateProvider struct {
	// PluginName is "plugin_name", such as "file_watcher". Never empty.
	PluginName string
	// Config is the plugin's "config" object exactly as written, or nil
	// when absent. Its contents are checked only for the plugins this
	// package knows, which gRPC knows too: "file_watcher".
	Config json.RawMessage
	// FileWatcher is Config parsed and validated when PluginName is
	// "file_watcher", else nil. Instances of other plugins are kept
	// unchecked, as gRPC skips plugins it does not know.
	FileWatcher *FileWatcherConfig
}

// Parse parses a bootstrap JSON document.
//
// Unknown keys are ignored, and a key whose value is null counts as absent.
// An error names the place in the document and the bad value, for example
// `xds bootstrap: xds_servers[1].server_uri: empty`; a JSON syntax error
// gives the line and column.
func Parse(data []byte) (*Config, error) {
	c, err := parse(data)
	if err != nil {
		return nil, bounded(fmt.Errorf("xds bootstrap: %w", err))
	}
	return c, nil
}

// ParseFile reads and parses the bootstrap file at path.
func ParseFile(path string) (*Config, error) {
	data, err := readFileAt(path)
	if err != nil {
		return nil, bounded(fmt.Errorf("xds bootstrap file %s: %w", quote(path), err))
	}
	c, err := parse(data)
	if err != nil {
		return nil, bounded(fmt.Errorf("xds bootstrap file %s: %w", quote(path), err))
	}
	return c, nil
}

// MaxFileSize bounds the bootstrap file ParseFile reads: far above any real
// bootstrap (a few KiB, or some hundreds of KiB with thousands of
// authorities), and small enough that naming a wrong file, or a device
// such as /dev/zero, fails at once instead of filling memory.
const MaxFileSize = 4 << 20

// readFileAt reads a file of at most MaxFileSize bytes, with an error that
// does not repeat its name.
func readFileAt(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, pathError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, pathError(err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB: not a bootstrap file", MaxFileSize>>20)
	}
	return data, nil
}

// pathError drops the path from a file error: callers name the file.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// FromEnv loads the bootstrap named by the environment: the file named by
// GRPC_XDS_BOOTSTRAP when that is set and not empty, else the JSON in
// GRPC_XDS_BOOTSTRAP_CONFIG. A file that cannot be read or parsed is an
// error; it does not fall back to GRPC_XDS_BOOTSTRAP_CONFIG. With neither
// set, the error is [ErrNoBootstrap].
func FromEnv() (*Config, error) {
	if path := os.Getenv(EnvBootstrapFile); path != "" {
		c, err := ParseFile(path)
		if err != nil {
			return nil, bounded(fmt.Errorf("%s: %w", EnvBootstrapFile, err))
		}
		return c, nil
	}
	if content := os.Getenv(EnvBootstrapConfig); content != "" {
		c, err := parse([]byte(content))
		if err != nil {
			return nil, bounded(fmt.Errorf("xds bootstrap from %s: %w", EnvBootstrapConfig, err))
		}
		return c, nil
	}
	return nil, ErrNoBootstrap
}

// validJSON checks that data is one well-formed JSON value.
func validJSON(data []byte) (json.RawMessage, error) {
	if json.Valid(data) {
		return data, nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		err = errors.New("not valid JSON")
	}
	return nil, syntaxError(data, err)
}

func parse(data []byte) (*Config, error) {
	raw, err := validJSON(data)
	if err != nil {
		return nil, err
	}
	top, err := asObject("", raw)
	if err != nil {
		return nil, err
	}
	c := &Config{}

	servers, ok, err := top.arr("xds_servers")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errAt(top.at("xds_servers"), "missing")
	case len(servers) == 0:
		return nil, errAt(top.at("xds_servers"), "empty")
	}
	if c.Servers, err = parseServers(top.at("xds_servers"), servers); err != nil {
		return nil, err
	}

	if c.Node, err = parseNode(top); err != nil {
		return nil, err
	}

	tmpl, _, err := top.str("client_default_listener_resource_name_template")
	if err != nil {
		return nil, err
	}
	if tmpl == "" {
		tmpl = DefaultClientListenerResourceNameTemplate
	}
	c.ClientDefaultListenerResourceNameTemplate = tmpl
	if c.ServerListenerResourceNameTemplate, _, err = top.str("server_listener_resource_name_template"); err != nil {
		return nil, err
	}

	if c.Authorities, err = parseAuthorities(top); err != nil {
		return nil, err
	}
	if c.CertificateProviders, err = parseCertificateProviders(top); err != nil {
		return nil, err
	}
	return c, nil
}

func parseServers(path string, elems []json.RawMessage) ([]*ServerConfig, error) {
	servers := make([]*ServerConfig, 0, len(elems))
	for i, raw := range elems {
		s, err := parseServer(joinIndex(path, i), raw)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// parseNode reads "node" of the top-level object.
func parseNode(top object) (*corev3.Node, error) {
	n := &corev3.Node{}
	o, ok, err := top.obj("node")
	if err != nil || !ok {
		return n, err
	}
	if n.Id, _, err = o.str("id"); err != nil {
		return nil, err
	}
	if n.Cluster, _, err = o.str("cluster"); err != nil {
		return nil, err
	}
	loc, ok, err := o.obj("locality")
	if err != nil {
		return nil, err
	}
	if ok {
		l := &corev3.Locality{}
		if l.Region, _, err = loc.str("region"); err != nil {
			return nil, err
		}
		if l.Zone, _, err = loc.str("zone"); err != nil {
			return nil, err
		}
		if l.SubZone, _, err = loc.str("sub_zone"); err != nil {
			return nil, err
		}
		if l.Region != "" || l.Zone != "" || l.SubZone != "" {
			n.Locality = l
		}
	}
	if raw, ok := o.get("metadata"); ok {
		if kindOf(raw) != kindObject {
			return nil, wrongType(o.at("metadata"), "a JSON object", raw)
		}
		md := &structpb.Struct{}
		if err := protojson.Unmarshal(raw, md); err != nil {
			return nil, errAt(o.at("metadata"), "%v", err)
		}
		n.Metadata = md
	}
	return n, nil
}

// parseAuthorities reads "authorities" of the top-level object.
func parseAuthorities(top object) (map[string]*Authority, error) {
	o, ok, err := top.obj("authorities")
	if err != nil || !ok {
		return nil, err
	}
	auths := make(map[string]*Authority, len(o.fields))
	for _, name := range sortedKeys(o.fields) {
		a, err := parseAuthority(joinEntry(o.path, name), name, o.fields[name])
		if err != nil {
			return nil, err
		}
		auths[name] = a
	}
	return auths, nil
}

func parseAuthority(path, name string, raw json.RawMessage) (*Authority, error) {
	o, err := asObject(path, raw)
	if err != nil {
		return nil, err
	}
	a := &Authority{Name: name}
	prefix := authorityPrefix(name)
	tmpl, _, err := o.str("client_listener_resource_name_template")
	switch {
	case err != nil:
		return nil, err
	case tmpl == "":
		tmpl = prefix + "envoy.config.listener.v3.Listener/%s"
	case !strings.HasPrefix(tmpl, prefix):
		return nil, errAt(o.at("client_listener_resource_name_template"), "%s does not start with %s", quote(tmpl), quote(prefix))
	}
	a.ClientListenerResourceNameTemplate = tmpl

	servers, ok, err := o.arr("xds_servers")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return a, nil
	case len(servers) == 0:
		return nil, errAt(o.at("xds_servers"), "empty")
	}
	if a.Servers, err = parseServers(o.at("xds_servers"), servers); err != nil {
		return nil, err
	}
	return a, nil
}

// parseCertificateProviders reads "certificate_providers" of the top-level
// object.
func parseCertificateProviders(top object) (map[string]CertificateProvider, error) {
	o, ok, err := top.obj("certificate_providers")
	if err != nil || !ok {
		return nil, err
	}
	providers := make(map[string]CertificateProvider, len(o.fields))
	for _, name := range sortedKeys(o.fields) {
		p, err := asObject(joinEntry(o.path, name), o.fields[name])
		if err != nil {
			return nil, err
		}
		plugin, ok, err := p.str("plugin_name")
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, errAt(p.at("plugin_name"), "missing")
		case plugin == "":
			return nil, errAt(p.at("plugin_name"), "empty")
		}
		config, ok := p.get("config")
		if ok && kindOf(config) != kindObject {
			return nil, wrongType(p.at("config"), "a JSON object", config)
		}
		cp := CertificateProvider{PluginName: plugin, Config: config}
		if plugin == PluginFileWatcher {
			if cp.FileWatcher, err = parseFileWatcher(p.at("config"), config); err != nil {
				return nil, err
			}
		}
		providers[name] = cp
	}
	return providers, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ServersFor returns the servers, in priority order, that serve the
// resource named resourceName (gRFC A47):
//
//   - a name that does not start with "xdstp:" is served by the top-level
//     servers;
//   - "xdstp://A/..." is served by the servers of authority A, or by the
//     top-level servers when A lists none; "xdstp:///..." selects the
//     authority "".
//
// An authority that is not in the bootstrap, or an xdstp: name with no
// authority part, is an error that names the authority and the resource.
func (c *Config) ServersFor(resourceName string) ([]*ServerConfig, error) {
	if !xdstp.Is(resourceName) {
		return c.Servers, nil
	}
	a, err := c.authorityOf(resourceName)
	if err != nil {
		return nil, bounded(err)
	}
	if a == nil || a.Servers == nil {
		return c.Servers, nil
	}
	return a.Servers, nil
}

// authorityOf returns the entry of Authorities that the xdstp: name
// selects; the entry may be nil in a hand-built Config.
func (c *Config) authorityOf(name string) (*Authority, error) {
	auth, err := xdstp.Authority(name)
	if err != nil {
		return nil, err
	}
	a, ok := c.Authorities[auth]
	if !ok {
		return nil, fmt.Errorf("authority %s not found in xds bootstrap for resource %s", quote(auth), quote(name))
	}
	return a, nil
}

// NodeID returns the node's id, or "" when there is none.
func (c *Config) NodeID() string {
	if c == nil {
		return ""
	}
	return c.Node.GetId()
}
