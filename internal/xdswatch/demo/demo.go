package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Names used by the embedded demo control plane.
const (
	// listenerName is the listener the demo configuration is rooted at.
	listenerName = "demo"
	// Target is the channel the demo routes by its listener: the one
	// whose RPCs the tour shows.
	Target = "xds:///" + listenerName
	// Cluster is the cluster its route sends every RPC to.
	Cluster = listenerName + "-cluster"
	// NodeID is the node ID in the demo bootstrap. The demo server
	// serves its configuration to every node, so it only labels requests.
	NodeID = "xdswatch-demo"
	// version1 is the version of the demo configuration.
	version1 = "1"
	// serverTemplate is the demo bootstrap's
	// server_listener_resource_name_template (gRFC A36).
	serverTemplate = "grpc/server?xds.resource.listening_address=%s"
	// ServerAddr is the address of the demo's xDS-enabled server when
	// --serve names none: xdswatch --serve 127.0.0.1:8443 serves it.
	ServerAddr = "127.0.0.1:8443"
	// loadInterval is the load_reporting_interval the demo's LRS
	// server asks for.
	loadInterval = 10 * time.Second
	// backendCount is how many backends the demo runs behind its cluster.
	backendCount = 2
)

// Resource is one resource the demo serves.
type Resource struct {
	Type xdsresource.Type
	Name string
}

// Demo is the running embedded demo control plane, with its backends and
// the certificates of its xDS-enabled server, and a bootstrap that names
// them.
type Demo struct {
	d *demo
	// tour is set when the demo was started for the tour.
	tour *tourDemo
}

// Start starts the demo: two backends (package backends: the health
// service and grpc.testing.TestService) on 127.0.0.1, and a control plane
// on a loopback port serving the demo configuration, with the backends as
// its cluster's endpoints, and a server Listener for each of serverAddrs
// (mTLS and RBAC), to every node; the same gRPC server serves LRS. It
// makes the certificates of the xDS-enabled server, which the demo's
// bootstrap names. With tour, it starts the servers of the tour too
// (RunTour): the primary adds a TP3 error to one version, and a
// secondary, which the bootstrap lists second, serves the tour's fallback.
func Start(ctx context.Context, serverAddrs []string, tour bool) (*Demo, error) {
	if !tour {
		d, err := startDemo(ctx, serverAddrs)
		if err != nil {
			return nil, err
		}
		return &Demo{d: d}, nil
	}
	td, err := startTourDemo(ctx, serverAddrs)
	if err != nil {
		return nil, err
	}
	return &Demo{d: td.demo, tour: td}, nil
}

// Addr returns the control plane's address, ip:port.
func (d *Demo) Addr() string { return d.d.addr }

// FallbackAddr returns the address of the tour's secondary server, "" when
// the demo was started without the tour.
func (d *Demo) FallbackAddr() string {
	if d.tour == nil {
		return ""
	}
	return d.tour.secondary.Addr()
}

// Bootstrap returns the demo's bootstrap: its servers, insecure, its node
// ID, its server_listener_resource_name_template and the certificate
// provider of its xDS-enabled server.
func (d *Demo) Bootstrap() *bootstrap.Config { return d.d.bootstrap }

// Resources returns the resources the demo serves: the listener, its
// route configuration, its cluster (with load reporting to the demo
// server) and the cluster's endpoints, and the Listener of the demo's
// xDS-enabled server on each of its addresses.
func (d *Demo) Resources() []Resource { return d.d.specs }

// Stop stops the servers and the backends, and removes the certificates.
func (d *Demo) Stop() { d.d.stop() }

// ServeTry returns, for people, how to call the demo's xDS-enabled server
// on addr under mTLS, with the demo client's certificate: a grpcurl
// command.
func (d *Demo) ServeTry(addr string) string {
	c := d.d.certs
	return fmt.Sprintf("grpcurl -cacert %s -cert %s -key %s -servername %s %s grpc.health.v1.Health/Check",
		c.files.CA, c.clientCert, c.clientKey, ServerName, addr)
}

// demo is a running embedded control plane with a bootstrap pointing at it.
type demo struct {
	// addr is the server's address, ip:port.
	addr string
	// bootstrap is a bootstrap for one insecure server at addr.
	bootstrap *bootstrap.Config
	// specs are the demo's resources: the listener, its route
	// configuration, its cluster (with load reporting to the demo server)
	// and the cluster's endpoints, and the Listener of the demo's
	// xDS-enabled server on each of serverAddrs.
	specs []Resource
	// serverAddrs are the addresses of the demo's xDS-enabled server.
	serverAddrs []string
	// certs are the certificates of the xDS-enabled server and of a
	// client of it.
	certs *demoCerts
	// resources are the configuration served (config), with the
	// backends' addresses as the cluster's endpoints.
	resources []proto.Message
	// backends are the gRPC servers behind the demo's cluster.
	backends []*backends.Backend
	// srv is the server first started at addr; the tour replaces it
	// (tourDemo.primary).
	srv *controlplane.Server
	// stop stops the server and the backends.
	stop func()
}

// startDemo starts two backends (package backends: the health service and
// grpc.testing.TestService) on 127.0.0.1, and a control plane on a
// loopback port serving the demo configuration (config) with the
// backends as the cluster's endpoints and a server Listener for each of
// serverAddrs to every node, with opts; the same gRPC server serves LRS.
// It makes the certificates of the xDS-enabled server, which the demo's
// bootstrap names.
func startDemo(ctx context.Context, serverAddrs []string, opts ...controlplane.Option) (*demo, error) {
	certs, err := makeDemoCerts()
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	d := &demo{serverAddrs: serverAddrs, certs: certs}
	for range backendCount {
		b, err := backends.Start()
		if err != nil {
			d.stopBackends()
			return nil, err
		}
		d.backends = append(d.backends, b)
	}
	srv, err := controlplane.Start(ctx, "127.0.0.1:0", serverOptions(opts...)...)
	if err != nil {
		d.stopBackends()
		return nil, err
	}
	d.stop = func() {
		srv.Stop()
		d.stopBackends()
	}
	if err := d.setUp(ctx, srv); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// stopBackends stops the demo's backends and removes its certificates.
func (d *demo) stopBackends() {
	for _, b := range d.backends {
		b.Stop()
	}
	d.certs.remove()
}

// serverOptions returns the options of the demo's control plane, a
// new LRS service included, followed by opts.
func serverOptions(opts ...controlplane.Option) []controlplane.Option {
	lrs := lrsserver.NewService(lrsserver.Config{Interval: loadInterval, SendAll: true})
	return append([]controlplane.Option{controlplane.WithDefaultNode(), controlplane.WithService(lrs.Register)}, opts...)
}

// config returns the demo configuration: listener listenerName,
// its route configuration sending every RPC to cluster Cluster, the
// cluster, which reports load to the server that sent it (lrs_server
// self), its endpoints (one locality with endpoints, all HEALTHY), and the
// Listener of the demo's xDS-enabled server on each of serverAddrs, under
// mTLS and RBAC (serverListener). Every configuration the demo and
// its tour serve is made from it.
func config(endpoints, serverAddrs []string) []proto.Message {
	route := listenerName + "-route"
	res := []proto.Message{
		controlplane.Listener(listenerName, route),
		controlplane.RouteConfig(route, []string{"*"}, Cluster),
		controlplane.ClusterWithLoadReporting(Cluster, ""),
		controlplane.Endpoints(Cluster, endpoints...),
	}
	for _, a := range serverAddrs {
		res = append(res, serverListener(a))
	}
	return res
}

// setUp loads the demo configuration, with d's backends as the cluster's
// endpoints, into srv and describes it in d.
func (d *demo) setUp(ctx context.Context, srv *controlplane.Server) error {
	addrs := make([]string, len(d.backends))
	for i, b := range d.backends {
		addrs[i] = b.Addr()
	}
	d.addr, d.srv, d.resources = srv.Addr(), srv, config(addrs, d.serverAddrs)
	if err := srv.SetResources(ctx, "", version1, d.resources...); err != nil {
		return err
	}
	specs, err := resourcesOf(d.resources, d.addr)
	if err != nil {
		return err
	}
	d.specs = specs
	cfg, err := bootstrap.Parse(bootstrapJSON(d.certs, bootstrapServer{URI: d.addr}))
	if err != nil {
		return err
	}
	d.bootstrap = cfg
	return nil
}

// resourcesOf returns a spec for each of resources, as served by serverURI.
// The names are read back through the client's own decoders, so that the
// watched names are exactly what the server serves.
func resourcesOf(resources []proto.Message, serverURI string) ([]Resource, error) {
	specs := make([]Resource, 0, len(resources))
	for _, m := range resources {
		a, err := anypb.New(m)
		if err != nil {
			return nil, fmt.Errorf("pack demo resource: %w", err)
		}
		typ := xdsresource.ByTypeURL(a.GetTypeUrl())
		if typ == nil {
			return nil, fmt.Errorf("demo resource of type %q: not one of the four types of gRPC", a.GetTypeUrl())
		}
		name, _, err := typ.Decode(xdsresource.DecodeOptions{ServerURI: serverURI}, a)
		if name == "" {
			return nil, fmt.Errorf("demo %s resource has no name: %v", typ.ShortName(), err)
		}
		specs = append(specs, Resource{Type: typ, Name: name})
	}
	return specs, nil
}

// bootstrapServer is one insecure server of the demo bootstrap.
type bootstrapServer struct {
	// URI is the server's address, ip:port.
	URI string
	// Features are its server_features.
	Features []string
}

// bootstrapJSON returns a bootstrap for insecure servers, in priority
// order, whose certificate_providers read certs.
func bootstrapJSON(certs *demoCerts, servers ...bootstrapServer) []byte {
	type creds struct {
		Type string `json:"type"`
	}
	type server struct {
		ServerURI      string   `json:"server_uri"`
		ChannelCreds   []creds  `json:"channel_creds"`
		ServerFeatures []string `json:"server_features,omitempty"`
	}
	type node struct {
		ID string `json:"id"`
	}
	list := make([]server, len(servers))
	for i, s := range servers {
		list[i] = server{ServerURI: s.URI, ChannelCreds: []creds{{Type: "insecure"}}, ServerFeatures: s.Features}
	}
	b, _ := json.Marshal(struct {
		XDSServers     []server        `json:"xds_servers"`
		Node           node            `json:"node"`
		ServerTemplate string          `json:"server_listener_resource_name_template"`
		Providers      json.RawMessage `json:"certificate_providers"`
	}{
		XDSServers:     list,
		Node:           node{ID: NodeID},
		ServerTemplate: serverTemplate,
		Providers:      certs.providersJSON(),
	})
	return b
}

// ReportLoad opens a load report of the demo's LRS cluster to the demo
// server, as a data plane using the cluster would, so that the LRS stream
// and its metrics can be seen without RPCs; this report counts no calls
// (the channels of xds:/// arguments report their RPCs' load themselves).
// It returns the func that ends the report.
func (d *Demo) ReportLoad(c *xdsclient.Client) (release func(), err error) {
	_, release, err = c.ReportLoad(d.d.addr, Cluster, Cluster)
	return release, err
}
