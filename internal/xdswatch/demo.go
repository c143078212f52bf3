package xdswatch

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
	// demoListener is the listener the demo configuration is rooted at.
	demoListener = "demo"
	// demoCluster is the cluster its route sends every RPC to.
	demoCluster = demoListener + "-cluster"
	// demoNodeID is the node ID in the demo bootstrap. The demo server
	// serves its configuration to every node, so it only labels requests.
	demoNodeID = "xdswatch-demo"
	// demoVersion is the version of the demo configuration.
	demoVersion = "1"
	// demoServerTemplate is the demo bootstrap's
	// server_listener_resource_name_template (gRFC A36), and
	// demoServerAddr the address of the demo's xDS-enabled server when
	// --serve names none: xdswatch --serve 127.0.0.1:8443 serves it.
	demoServerTemplate = "grpc/server?xds.resource.listening_address=%s"
	demoServerAddr     = "127.0.0.1:8443"
	// demoLoadInterval is the load_reporting_interval the demo's LRS
	// server asks for.
	demoLoadInterval = 10 * time.Second
	// demoBackends is how many backends the demo runs behind its cluster.
	demoBackends = 2
)

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
	specs []spec
	// serverAddrs are the addresses of the demo's xDS-enabled server.
	serverAddrs []string
	// certs are the certificates of the xDS-enabled server and of a
	// client of it.
	certs *demoCerts
	// resources are the configuration served (demoResources), with the
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
// loopback port serving the demo configuration (demoResources) with the
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
	for range demoBackends {
		b, err := backends.Start()
		if err != nil {
			d.stopBackends()
			return nil, err
		}
		d.backends = append(d.backends, b)
	}
	srv, err := controlplane.Start(ctx, "127.0.0.1:0", demoServerOptions(opts...)...)
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

// demoServerOptions returns the options of the demo's control plane, a
// new LRS service included, followed by opts.
func demoServerOptions(opts ...controlplane.Option) []controlplane.Option {
	lrs := lrsserver.NewService(lrsserver.Config{Interval: demoLoadInterval, SendAll: true})
	return append([]controlplane.Option{controlplane.WithDefaultNode(), controlplane.WithService(lrs.Register)}, opts...)
}

// demoResources returns the demo configuration: listener demoListener,
// its route configuration sending every RPC to cluster demoCluster, the
// cluster, which reports load to the server that sent it (lrs_server
// self), its endpoints (one locality with endpoints, all HEALTHY), and the
// Listener of the demo's xDS-enabled server on each of serverAddrs, under
// mTLS and RBAC (demoServerListener). Every configuration the demo and
// its tour serve is made from it.
func demoResources(endpoints, serverAddrs []string) []proto.Message {
	route := demoListener + "-route"
	res := []proto.Message{
		controlplane.Listener(demoListener, route),
		controlplane.RouteConfig(route, []string{"*"}, demoCluster),
		controlplane.ClusterWithLoadReporting(demoCluster, ""),
		controlplane.Endpoints(demoCluster, endpoints...),
	}
	for _, a := range serverAddrs {
		res = append(res, demoServerListener(a))
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
	d.addr, d.srv, d.resources = srv.Addr(), srv, demoResources(addrs, d.serverAddrs)
	if err := srv.SetResources(ctx, "", demoVersion, d.resources...); err != nil {
		return err
	}
	specs, err := specsOf(d.resources, d.addr)
	if err != nil {
		return err
	}
	d.specs = specs
	cfg, err := bootstrap.Parse(demoBootstrapJSON(d.certs, demoServer{URI: d.addr}))
	if err != nil {
		return err
	}
	d.bootstrap = cfg
	return nil
}

// specsOf returns a spec for each of resources, as served by serverURI.
// The names are read back through the client's own decoders, so that the
// watched names are exactly what the server serves.
func specsOf(resources []proto.Message, serverURI string) ([]spec, error) {
	specs := make([]spec, 0, len(resources))
	for _, m := range resources {
		a, err := anypb.New(m)
		if err != nil {
			return nil, fmt.Errorf("pack demo resource: %w", err)
		}
		typ, err := resolveType(a.GetTypeUrl())
		if err != nil {
			return nil, fmt.Errorf("demo resource: %w", err)
		}
		name, _, err := typ.Decode(xdsresource.DecodeOptions{ServerURI: serverURI}, a)
		if name == "" {
			return nil, fmt.Errorf("demo %s resource has no name: %v", typeLabel(typ), err)
		}
		specs = append(specs, spec{typ: typ, name: name})
	}
	return specs, nil
}

// demoServer is one insecure server of the demo bootstrap.
type demoServer struct {
	// URI is the server's address, ip:port.
	URI string
	// Features are its server_features.
	Features []string
}

// demoBootstrapJSON returns a bootstrap for insecure servers, in priority
// order, whose certificate_providers read certs.
func demoBootstrapJSON(certs *demoCerts, servers ...demoServer) []byte {
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
		Node:           node{ID: demoNodeID},
		ServerTemplate: demoServerTemplate,
		Providers:      certs.providersJSON(),
	})
	return b
}

// reportLoad opens a load report of the demo's LRS cluster to the demo
// server, as a data plane using the cluster would, so that the LRS stream
// and its metrics can be seen without RPCs; this report counts no calls
// (the channels of xds:/// arguments report their RPCs' load themselves).
// It returns the func that ends the report.
func (d *demo) reportLoad(c *xdsclient.Client) (release func(), err error) {
	_, release, err = c.ReportLoad(d.addr, demoCluster, demoCluster)
	return release, err
}
