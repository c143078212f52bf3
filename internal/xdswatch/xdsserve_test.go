package xdswatch

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

// servingLine is the JSON line of a serving mode change.
type servingLine struct {
	TS      string `json:"ts"`
	Event   string `json:"event"`
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Message string `json:"message"`
}

// nextServing reads standard output until a serving line, and decodes it
// strictly.
func nextServing(t *testing.T, p *proc) servingLine {
	t.Helper()
	for {
		line := p.line(t)
		if !strings.Contains(line, `"event":"serving"`) {
			continue
		}
		var s servingLine
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("serving line %q: %v", line, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, s.TS); err != nil {
			t.Errorf("serving line %q: ts: %v", line, err)
		}
		return s
	}
}

// freeLoopbackAddr returns 127.0.0.1:PORT with a port nothing listens on
// now.
func freeLoopbackAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

// TestServe runs xdswatch --serve against a control plane: a serving line
// once the Listener comes, RPCs through it (RBAC denying one with
// PERMISSION_DENIED), the server's metrics, and a NOT_SERVING line naming
// the cause when the Listener names another port.
func TestServe(t *testing.T) {
	t.Parallel()
	env := servertest.NewEnv(t, servertest.Options{})
	bootstrapFile := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(bootstrapFile, []byte(env.Bootstrap), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	host, port := servertest.HostPort(t, addr)
	name := servertest.ListenerName(addr)
	listener := func(port uint32) proto.Message {
		rbac := serverres.RBAC("authz", rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{
			"no-unary-call": serverres.Policy(serverres.PathPrefix("/grpc.testing.TestService/UnaryCall"), serverres.AnyPrincipal),
		})
		return serverres.Listener(name, host, port, nil, serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), rbac), nil))
	}
	env.Set(listener(port))

	p := startRun(t, "--bootstrap", bootstrapFile, "--output", "json", "--metrics-addr", "127.0.0.1:0", "--serve", addr)
	l := p.event(t)
	if s := nextServing(t, p); s.Address != addr || s.Mode != "SERVING" || s.Message != "" {
		t.Fatalf("serving line %+v, want %s SERVING", s, addr)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for method, want := range map[string]codes.Code{
		"/grpc.testing.TestService/EmptyCall": codes.OK,
		"/grpc.testing.TestService/UnaryCall": codes.PermissionDenied,
		"/grpc.health.v1.Health/Check":        codes.OK,
	} {
		if err := conn.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != want {
			t.Errorf("%s: %v, want %v", method, err, want)
		}
	}
	resp, err := http.Get("http://" + *l.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`xdslens_xds_server_serving{`,
		`xdslens_xds_server_rbac_decisions_total{`,
		`xdslens_rbac_policy="no-unary-call"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	env.Set(listener(port + 1))
	s := nextServing(t, p)
	if s.Mode != "NOT_SERVING" || !strings.Contains(s.Message, name) || !strings.Contains(s.Message, "not the listening address "+addr) {
		t.Errorf("serving line %+v, want NOT_SERVING naming the Listener and the address", s)
	}
	p.interruptClean(t)
}

// TestServeUsage checks the usage errors of --serve.
func TestServeUsage(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t) // its bootstrap has no server template
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--serve", "no-port"}, `invalid value "no-port" for flag -serve: want HOST:PORT`},
		{[]string{"--bootstrap", cp.bootstrapFile, "--serve", "127.0.0.1:0"}, "--serve: the bootstrap has no server_listener_resource_name_template"},
	} {
		p := startRun(t, tc.args...)
		if code := p.exitCode(t); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, code, exitUsage)
		}
		if l := p.errLine(t); !strings.Contains(l, tc.want) {
			t.Errorf("%q: stderr %q, want %q", tc.args, l, tc.want)
		}
	}
}
