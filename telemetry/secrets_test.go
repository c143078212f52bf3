package telemetry_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	channelzgrpc "google.golang.org/grpc/channelz/grpc_channelz_v1"
	channelzservice "google.golang.org/grpc/channelz/service"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The secrets a bootstrap's server URIs carry in TestServerURISecretsNeverShown.
var uriSecrets = []string{"pwInPath9", "tokInQuery9", "pwInAuthority9", "tokInFragment9"}

// A server_uri with credentials (user info in the authority or in the
// endpoint, a query, a fragment) is dialled as written, and shown with
// them hidden everywhere the client shows a server: the grpc.xds.server
// label, log lines, watcher errors (gRPC's own error text, which quotes
// the address, included), hooks and Dump. The label is the same for
// every series of a server.
func TestServerURISecretsNeverShown(t *testing.T) {
	t.Parallel()
	srv := xdstest.NewADSServer(t)
	// The authority "bad" has only a server that gRPC's DNS resolver
	// cannot resolve: "user:pw@host:port" is no address, and gRPC says so
	// quoting it. The top-level server is reached through passthrough,
	// with user info in the authority, a query and a fragment.
	bad := "dns:///user:" + uriSecrets[0] + "@" + srv.Addr() + "?token=" + uriSecrets[1]
	good := "passthrough://user:" + uriSecrets[2] + "@/" + srv.Addr() + "?token=" + uriSecrets[1] + "#" + uriSecrets[3]
	shownBad := "dns:///[redacted]@" + srv.Addr() + "?[redacted]"
	shownGood := "passthrough://[redacted]@/" + srv.Addr() + "?[redacted]#[redacted]"
	b := xdstest.Bootstrap{
		Servers:     []string{good},
		Node:        `{"id": "` + testNodeID + `"}`,
		Authorities: `{"bad": {"xds_servers": ` + xdstest.ServersJSON(bad) + `}}`,
	}
	var logs xdstest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := &shownRecorder{}
	f := newFixtureOn(t, srv, b, xdsclient.WithLogger(logger), xdsclient.WithHooks(rec.hooks()))

	badName := "xdstp://bad/envoy.config.cluster.v3.Cluster/c2"
	watchers := map[string]*errWatcher{"c1": {}, badName: {}}
	for name, w := range watchers {
		t.Cleanup(f.c.Watch(xdsresource.ClusterType, name, w))
	}
	// The good server answers c1 with a cluster the client rejects: the
	// NACK's error names the server.
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.Send(st, xdstest.Response(cdsURL, "1", xdstest.InvalidCluster("c1")))
	ok := xdstest.Until(f.Ctx, func() bool {
		return watchers["c1"].has(codes.InvalidArgument) && watchers[badName].has(codes.Unavailable) &&
			strings.Contains(logs.String(), "ADS stream failed before any response")
	})
	if !ok {
		t.Fatalf("watcher errors %q and %q, logs:\n%s", watchers["c1"].texts(), watchers[badName].texts(), logs.String())
	}

	// Load reports go to the server named as shown (a Resource's Server)
	// or as written, and are labelled as shown. The scripted server has
	// no LRS service: the stream fails.
	for _, server := range []string{shownGood, good} {
		_, release, err := f.c.ReportLoad(server, "c1", "")
		if err != nil {
			t.Fatalf("ReportLoad(%q): %v", server, err)
		}
		t.Cleanup(release)
	}
	// The stream fails and starts again (with the tests' short backoff):
	// one start or more, all under the label shown.
	lrsLabels := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, shownGood)
	if !xdstest.Until(f.Ctx, func() bool { return f.series(telemetry.MetricLRSStreamsStarted)[lrsLabels] >= 1 }) {
		t.Fatalf("%s{%s}: want 1 or more; series are %s", telemetry.MetricLRSStreamsStarted, lrsLabels, show(f.series(telemetry.MetricLRSStreamsStarted)))
	}

	// Everything shown, in one text.
	var all strings.Builder
	fmt.Fprintln(&all, logs.String())
	for name, w := range watchers {
		fmt.Fprintln(&all, name, w.texts())
	}
	fmt.Fprintln(&all, rec.text())
	for _, e := range f.c.Dump() {
		fmt.Fprintln(&all, e.Server, e.ResourceServer, e.Err)
	}
	// What channelz (the admin port's) shows of the channels: their
	// targets and the events of their traces.
	channels := channelzChannels(t)
	for _, ch := range channels {
		fmt.Fprintln(&all, ch.GetData().GetTarget())
		for _, ev := range ch.GetData().GetTrace().GetEvents() {
			fmt.Fprintln(&all, ev.GetDescription())
		}
	}
	if !slices.ContainsFunc(channels, func(ch *channelzgrpc.Channel) bool {
		return ch.GetData().GetTarget() == "xdslens-xds-server:///"+shownGood
	}) {
		t.Errorf("channelz lists no channel to the xDS server as shown, xdslens-xds-server:///%s", shownGood)
	}
	servers := map[string]bool{}
	rm := collect(t, f.reader)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for l := range series(rm, m.Name) {
				fmt.Fprintln(&all, m.Name, l)
			}
		}
	}
	for l := range f.series(telemetry.MetricServerFailure) {
		servers[l] = true
	}
	shown := all.String()
	for _, secret := range uriSecrets {
		if i := strings.Index(shown, secret); i >= 0 {
			t.Errorf("secret %q shown: ...%s...", secret, shown[max(0, i-200):min(len(shown), i+100)])
		}
	}
	// What is shown names the servers, the same way everywhere.
	for _, want := range []string{
		lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, shownBad),
	} {
		if !servers[want] {
			t.Errorf("server_failure series %v, want one with %s", servers, want)
		}
	}
	for _, want := range []string{`"` + shownGood + `"`, `"` + shownBad + `"`, "server=" + shownBad} {
		if !strings.Contains(shown, want) {
			t.Errorf("nothing shown names a server as %s:\n%s", want, shown)
		}
	}
	f.waitPoint(telemetry.MetricConnected, lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, shownGood), 1)
}

// errWatcher keeps the errors its watch gets.
type errWatcher struct {
	mu   sync.Mutex
	errs []error
}

func (w *errWatcher) ResourceChanged(_ *xdsclient.Resource, err error) { w.add(err) }
func (w *errWatcher) AmbientError(err error)                           { w.add(err) }

func (w *errWatcher) add(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
	xdstest.Notify()
}

// has reports whether an error of code came.
func (w *errWatcher) has(code codes.Code) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, err := range w.errs {
		if status.Code(err) == code {
			return true
		}
	}
	return false
}

func (w *errWatcher) texts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, err := range w.errs {
		out = append(out, err.Error())
	}
	return out
}

// shownRecorder writes every hook's Info as text.
type shownRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *shownRecorder) add(info any) {
	r.mu.Lock()
	fmt.Fprintf(&r.buf, "%+v\n", info)
	r.mu.Unlock()
}

func (r *shownRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

func (r *shownRecorder) hooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged:     func(i xdsclient.ConnectivityInfo) { r.add(i) },
		ConnectedChanged:        func(i xdsclient.ConnectedInfo) { r.add(i) },
		StreamStarted:           func(i xdsclient.StreamInfo) { r.add(i) },
		StreamEnded:             func(i xdsclient.StreamEndInfo) { r.add(i) },
		StreamStartFailed:       func(i xdsclient.StreamEndInfo) { r.add(i) },
		ServerFailure:           func(i xdsclient.ServerFailureInfo) { r.add(i) },
		ChannelClosed:           func(i xdsclient.ChannelInfo) { r.add(i) },
		RequestSent:             func(i xdsclient.RequestInfo) { r.add(i) },
		ResponseReceived:        func(i xdsclient.ResponseInfo) { r.add(i) },
		CacheStateChanged:       func(i xdsclient.CacheStateInfo) { r.add(i) },
		WatcherNotified:         func(i xdsclient.NotificationInfo) { r.add(i) },
		AuthorityServerChanged:  func(i xdsclient.AuthorityServerInfo) { r.add(i) },
		ResourceTimerStarted:    func(i xdsclient.ResourceTimerInfo) { r.add(i) },
		ResourceTimerStopped:    func(i xdsclient.ResourceTimerInfo) { r.add(i) },
		LoadReportStreamStarted: func(i xdsclient.LoadReportStreamInfo) { r.add(i) },
		LoadReportStreamEnded:   func(i xdsclient.LoadReportStreamEndInfo) { r.add(i) },
		LoadReportSent:          func(i xdsclient.LoadReportInfo) { r.add(i) },
	}
}

// channelzChannels returns every top channel of the process, as a
// channelz service on loopback lists them.
func channelzChannels(t *testing.T) []*channelzgrpc.Channel {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	channelzservice.RegisterChannelzServiceToServer(srv)
	go srv.Serve(lis)
	defer srv.Stop()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cz := channelzgrpc.NewChannelzClient(cc)
	var out []*channelzgrpc.Channel
	var start int64
	for {
		resp, err := cz.GetTopChannels(xdstest.Context(t), &channelzgrpc.GetTopChannelsRequest{StartChannelId: start})
		if err != nil {
			t.Fatalf("channelz GetTopChannels: %v", err)
		}
		for _, ch := range resp.GetChannel() {
			out = append(out, ch)
			start = ch.GetRef().GetChannelId() + 1
		}
		if resp.GetEnd() || len(resp.GetChannel()) == 0 {
			return out
		}
	}
}
