package admin_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// listHistory asks the admin server on cc for the config histories.
func listHistory(t *testing.T, cc *grpc.ClientConn) []history.Channel {
	t.Helper()
	out := new(structpb.Struct)
	if err := cc.Invoke(xdstest.Context(t), admin.ConfigHistoryList, &emptypb.Empty{}, out); err != nil {
		t.Fatalf("List: %v", err)
	}
	b, err := protojson.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Channels []history.Channel `json:"channels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&answer); err != nil {
		t.Fatalf("List answered %s: %v", b, err)
	}
	return answer.Channels
}

// TestConfigHistory routes a channel through six versions of its
// configuration (a first config, an inserted route and a new cluster, new
// endpoints, a listener that fails the config, the listener back, the
// inserted route gone) and reads each entry from the admin port: its
// resources with their versions, and what changed, aligned over the
// inserted route; the channel keeps the last three.
func TestConfigHistory(t *testing.T) {
	events := make(chan string, 10)
	e := rpctest.NewEnv(t, 2, xdsgrpc.WithConfigHistory(3), xdsgrpc.WithHooks(&xdsgrpc.Hooks{
		ConfigChanged: func(xdsgrpc.ConfigInfo) { events <- "config" },
		ConfigFailed:  func(xdsgrpc.ConfigErrorInfo) { events <- "config_error" },
	}))
	cc, _ := serveAdmin(t, e.Pool, admin.WithConfigHistory(e.Builder))
	ctx := xdstest.Context(t)
	next := func(want string) history.Entry {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %s, want %s", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %s event", want)
		}
		chans := listHistory(t, cc)
		if len(chans) != 1 {
			t.Fatalf("%d channels, want 1", len(chans))
		}
		c := chans[0]
		if c.Target != "xdslens:///L" || c.Listener != "L" || c.Capacity != 3 || len(c.Entries) == 0 {
			t.Fatalf("channel %+v", c)
		}
		last := c.Entries[len(c.Entries)-1]
		if last.Seq != c.Recorded || last.Event != want {
			t.Fatalf("last entry #%d %s of %d recorded, want #%d %s", last.Seq, last.Event, c.Recorded, c.Recorded, want)
		}
		return last
	}
	toA := rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("A"))
	canary := rpctest.Route(rpctest.WithHeader(rpctest.PrefixMatch(""), "x-env", "canary"), rpctest.ToCluster("B"))
	canary.Name = "canary"
	a0, a1 := e.Addr(0), e.Addr(1)
	both := strings.Join(slices.Sorted(slices.Values([]string{a0, a1})), " ") // descriptions sort the addresses of a priority

	e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0))
	e.Dial("xdslens:///L").Connect()
	checkEntry(t, next("config"), []string{"lds L 1", "rds R 1", "cds A 1", "eds A 1"}, []string{
		`listener L added: "" -> "RDS \"R\", HTTP filters [envoy.filters.http.router]"`,
		`route_config R added: "" -> "RDS \"R\""`,
		`virtual_host R-vh added: "" -> "\"R-vh\", domains [\"*\"]"`,
		`route #0 added: "" -> "prefix \"\" -> cluster \"A\""`,
		`cluster A added: "" -> "eds \"A\" round_robin, endpoints [` + a0 + `]"`,
	})

	e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", canary, toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0),
		controlplane.Cluster("B", ""), controlplane.Endpoints("B", a1))
	checkEntry(t, next("config"), []string{"lds L 1", "rds R 2", "cds A 1", "eds A 1", "cds B 2", "eds B 2"}, []string{
		`route canary added: "" -> "prefix \"\", header \"x-env\" exact \"canary\" -> cluster \"B\""`,
		`cluster B added: "" -> "eds \"B\" round_robin, endpoints [` + a1 + `]"`,
	})

	e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", canary, toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0, a1),
		controlplane.Cluster("B", ""), controlplane.Endpoints("B", a1))
	checkEntry(t, next("config"), []string{"lds L 1", "rds R 2", "cds A 1", "eds A 3", "cds B 2", "eds B 2"}, []string{
		`cluster A changed: "eds \"A\" round_robin, endpoints [` + a0 + `]" -> "eds \"A\" round_robin, endpoints [` + both + `]"`,
	})

	e.Set(controlplane.ServerListener("L", "127.0.0.1", 1, "R"), rpctest.RouteConfig("R", canary, toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0, a1),
		controlplane.Cluster("B", ""), controlplane.Endpoints("B", a1))
	failed := next("config_error")
	if failed.Error == nil || failed.Error.Code != "UNAVAILABLE" || !strings.Contains(failed.Error.Message, `LDS resource "L"`) ||
		!strings.Contains(failed.Error.Message, "not an API listener") || len(failed.Changes) != 0 || len(failed.Resources) != 0 {
		t.Errorf("failed config: %+v", failed)
	}

	// Back: nothing that routes differs from the last config, the error
	// between aside.
	e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", canary, toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0, a1),
		controlplane.Cluster("B", ""), controlplane.Endpoints("B", a1))
	checkEntry(t, next("config"), []string{"lds L 5", "rds R 2", "cds A 1", "eds A 3", "cds B 2", "eds B 2"}, nil)

	// The canary route goes, and cluster B with it (its resources stay
	// served, so that one response changes the config).
	e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", toA),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", a0, a1),
		controlplane.Cluster("B", ""), controlplane.Endpoints("B", a1))
	checkEntry(t, next("config"), []string{"lds L 5", "rds R 6", "cds A 1", "eds A 3"}, []string{
		`route canary removed: "prefix \"\", header \"x-env\" exact \"canary\" -> cluster \"B\"" -> ""`,
		`cluster B removed: "eds \"B\" round_robin, endpoints [` + a1 + `]" -> ""`,
	})

	c := listHistory(t, cc)[0]
	var seqs []uint64
	for _, en := range c.Entries {
		seqs = append(seqs, en.Seq)
	}
	if c.Recorded != 6 || !slices.Equal(seqs, []uint64{4, 5, 6}) {
		t.Errorf("recorded %d, entries %v; want 6 recorded and the last 3 kept", c.Recorded, seqs)
	}
	for i := 1; i < len(c.Entries); i++ {
		if c.Entries[i].Time.Before(c.Entries[i-1].Time) {
			t.Errorf("entry %d came before entry %d", c.Entries[i].Seq, c.Entries[i-1].Seq)
		}
	}
}

// checkEntry checks a config entry's resources ("type name version") and
// changes ("kind name op: before -> after").
func checkEntry(t *testing.T, got history.Entry, resources, changes []string) {
	t.Helper()
	var rs, cs []string
	for _, r := range got.Resources {
		rs = append(rs, r.Type+" "+r.Name+" "+r.Version)
	}
	for _, c := range got.Changes {
		cs = append(cs, c.Kind+" "+c.Name+" "+c.Op+": "+strconv.Quote(c.Before)+" -> "+strconv.Quote(c.After))
	}
	if !slices.Equal(rs, resources) {
		t.Errorf("entry %d resources:\n%s\nwant\n%s", got.Seq, strings.Join(rs, "\n"), strings.Join(resources, "\n"))
	}
	if !slices.Equal(cs, changes) {
		t.Errorf("entry %d changes:\n%s\nwant\n%s", got.Seq, strings.Join(cs, "\n"), strings.Join(changes, "\n"))
	}
	if got.RouteConfig != "R" || got.VirtualHost != "R-vh" || got.ChangesOmitted != 0 || got.ResourcesOmitted != 0 {
		t.Errorf("entry %d: %+v", got.Seq, got)
	}
}

// TestConfigHistoryReflection checks that server reflection describes the
// service, as grpcurl needs, and that it is registered only when asked.
func TestConfigHistoryReflection(t *testing.T) {
	e := rpctest.NewEnv(t, 0)
	cc, _ := serveAdmin(t, e.Pool, admin.WithConfigHistory(e.Builder))
	got, err := listServices(t, cc)
	if err != nil || !slices.Contains(got, admin.ConfigHistoryService) {
		t.Fatalf("reflection lists %v (%v), without %s", got, err, admin.ConfigHistoryService)
	}
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(xdstest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: admin.ConfigHistoryService}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	fds := resp.GetFileDescriptorResponse().GetFileDescriptorProto()
	if len(fds) == 0 {
		t.Fatalf("reflection: %v", resp)
	}
	var found bool
	for _, b := range fds {
		if strings.Contains(string(b), "ConfigHistory") && strings.Contains(string(b), "google.protobuf.Struct") {
			found = true
		}
	}
	if !found {
		t.Errorf("reflection's files do not declare the service")
	}
	if chans := listHistory(t, cc); len(chans) != 0 {
		t.Errorf("no channel, but %d histories", len(chans))
	}

	plain, _ := serveAdmin(t, e.Pool)
	err = plain.Invoke(xdstest.Context(t), admin.ConfigHistoryList, &emptypb.Empty{}, new(structpb.Struct))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("List without WithConfigHistory: %v, want Unimplemented", err)
	}
}
