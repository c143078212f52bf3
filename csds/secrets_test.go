package csds_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/redact"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// A Cluster and a server Listener whose TLS context carries a private key,
// by each field that can carry one, current or deprecated, and a server
// Listener with the key in a filter chain that gRPC ignores, are NACKed by
// a client of a scripted server, with an error naming the field; CSDS
// shows each as NACKED with its failed_configuration, the key redacted.
func TestSecretsNACKedAndRedacted(t *testing.T) {
	f := &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)}}
	f.c = newClient(t, xdstest.Bootstrap{
		Servers:              []string{f.Srv.Addr()},
		Node:                 `{"id": "` + testNodeID + `"}`,
		CertificateProviders: xdstest.SecretProviders,
	}.Parse(t))
	f.csds = serveCSDS(t, f.c)

	cases := xdstest.SecretCases(t)
	type watch struct {
		typeURL, name, want string
		rec                 *xdstest.Watcher
	}
	var watches []watch
	var clusters, listeners []proto.Message
	for i, sc := range cases {
		if sc.Upstream != nil {
			c := controlplane.Cluster(fmt.Sprintf("c%d", i), "svc")
			c.TransportSocket = xdstest.TLSSocket(t, sc.Upstream)
			clusters = append(clusters, c)
			watches = append(watches, watch{cdsURL, c.GetName(), `cds "` + c.GetName() + `": transport_socket.typed_config.` + sc.Error, xdstest.NewWatcher()})
		}
		l := controlplane.ServerListener(fmt.Sprintf("server-%d", i), "127.0.0.1", 8443, "r1")
		l.FilterChains[0].TransportSocket = xdstest.TLSSocket(t, sc.Downstream)
		listeners = append(listeners, l)
		watches = append(watches, watch{ldsURL, l.GetName(), `lds "` + l.GetName() + `": filter_chains[0].transport_socket.typed_config.` + sc.Error, xdstest.NewWatcher()})
	}
	// A filter chain that gRPC ignores (it matches on server_names) is
	// not validated, but the key it carries is rejected all the same.
	l := controlplane.ServerListener("server-ignored-chain", "127.0.0.1", 8443, "r1")
	ignored := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
	ignored.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: []string{"a.example.com"}}
	ignored.TransportSocket = xdstest.TLSSocket(t, cases[0].Downstream)
	l.FilterChains = append(l.FilterChains, ignored)
	listeners = append(listeners, l)
	watches = append(watches, watch{ldsURL, l.GetName(), `lds "` + l.GetName() + `": filter_chains[1].transport_socket.typed_config.` + cases[0].Error, xdstest.NewWatcher()})

	for _, w := range watches {
		typ := xdsresource.ClusterType
		if w.typeURL == ldsURL {
			typ = xdsresource.ListenerType
		}
		t.Cleanup(f.c.Watch(typ, w.name, w.rec))
	}
	st := f.NextStream()
	// The client may ask for the names over several requests: wait for
	// the one that names them all.
	for _, want := range []struct {
		typeURL string
		n       int
	}{{cdsURL, len(clusters)}, {ldsURL, len(listeners)}} {
		for {
			if len(f.RecvType(st, want.typeURL).GetResourceNames()) == want.n {
				break
			}
		}
	}
	f.Send(st, xdstest.Response(cdsURL, "1", clusters...))
	f.Send(st, xdstest.Response(ldsURL, "1", listeners...))
	for _, w := range watches {
		got := w.rec.Next(t)
		if got.Kind != xdsclient.NotifyResourceError || status.Code(got.Err) != codes.InvalidArgument || !strings.Contains(got.Err.Error(), w.want) {
			t.Errorf("%s: got %v\nwant an INVALID_ARGUMENT error with %s", w.name, got, w.want)
		}
	}

	resp := f.fetch()
	whole, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(whole, []byte(xdstest.SecretKey)) {
		t.Error("the private key is in the CSDS response")
	}
	seen := map[string]bool{}
	for _, cfg := range resp.GetConfig() {
		for _, g := range cfg.GetGenericXdsConfigs() {
			seen[g.GetName()] = true
			failed := g.GetErrorState().GetFailedConfiguration()
			switch {
			case g.GetClientStatus() != adminv3.ClientResourceStatus_NACKED:
				t.Errorf("%s: status %v, want NACKED", g.GetName(), g.GetClientStatus())
			case failed == nil:
				t.Errorf("%s: no failed_configuration", g.GetName())
			case !bytes.Contains(failed.GetValue(), []byte(redact.Redacted)):
				t.Errorf("%s: failed_configuration has no %q in place of the key", g.GetName(), redact.Redacted)
			}
		}
	}
	for _, w := range watches {
		if !seen[w.name] {
			t.Errorf("%s: not in CSDS", w.name)
		}
	}
}
