package exporters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"log/slog"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// failingReceiver is an OTLP gRPC receiver that answers each export with
// the error of its turn, nil for success.
type failingReceiver struct {
	colmetricpb.UnimplementedMetricsServiceServer
	mu      sync.Mutex
	answers []error
}

func (r *failingReceiver) Export(context.Context, *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.answers[0]
	if len(r.answers) > 1 {
		r.answers = r.answers[1:]
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, err
}

// logLine is one line of a JSON slog handler.
type logLine struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Err    string `json:"err"`
	Failed int    `json:"failed"`
}

// logLines parses the JSON lines of buf.
func logLines(t *testing.T, buf *bytes.Buffer) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, ll)
	}
	buf.Reset()
	return out
}

// globalErrors records what reaches OpenTelemetry's global error handler
// until the test ends.
func globalErrors(t *testing.T) *[]error {
	var mu sync.Mutex
	var errs []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	return &errs
}

// TestOTLPErrorsLogged exports to a real OTLP gRPC receiver that refuses,
// accepts, then refuses again for other causes: each failure is logged as
// it happens, a warning for the first of a cause and debug for its
// repeats, info when exports work again, and none reaches OpenTelemetry's
// global error handler. A receiver's status message of 100 KiB is logged
// cut to 8 KiB.
func TestOTLPErrorsLogged(t *testing.T) {
	ctx := testContext(t)
	global := globalErrors(t)
	huge := strings.Repeat("x", 100<<10)
	recv := &failingReceiver{answers: []error{
		status.Error(codes.PermissionDenied, "denied"),
		status.Error(codes.PermissionDenied, "denied"),
		status.Error(codes.PermissionDenied, "denied"),
		nil,
		nil,
		status.Error(codes.Unauthenticated, "who are you"),
		status.Error(codes.InvalidArgument, huge),
		nil,
	}}
	addr := xdstest.ServeGRPC(t, func(g *grpc.Server) { colmetricpb.RegisterMetricsServiceServer(g, recv) })

	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := exporters.OTLPGRPC(ctx, addr, exporters.WithInsecure(), exporters.WithLogger(logger), exporters.WithInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	counter, _ := p.Meter("test").Int64Counter("exports")
	counter.Add(ctx, 1, metric.WithAttributes())
	flush := func() []logLine {
		t.Helper()
		if err := p.ForceFlush(ctx); err != nil {
			t.Fatalf("ForceFlush: %v, want the failure logged instead", err)
		}
		return logLines(t, &buf)
	}
	want := func(what string, got []logLine, level, msg string) {
		t.Helper()
		if len(got) != 1 || got[0].Level != level || got[0].Msg != msg {
			t.Fatalf("%s: logged %+v, want one %s %q", what, got, level, msg)
		}
	}
	want("first failure", flush(), "WARN", "metrics export failed; the next export tries again")
	for i := range 2 {
		got := flush()
		want("the same failure again", got, "DEBUG", "metrics export failed again")
		if got[0].Failed != i+2 {
			t.Errorf("failed = %d, want %d", got[0].Failed, i+2)
		}
	}
	want("success", flush(), "INFO", "metrics export works again")
	if got := flush(); len(got) != 0 {
		t.Fatalf("a second success logged %+v", got)
	}
	want("another cause", flush(), "WARN", "metrics export failed; the next export tries again")
	got := flush()
	want("a third cause", got, "WARN", "metrics export failed; the next export tries again")
	if n := len(got[0].Err); n > 8<<10 || !strings.Contains(got[0].Err, "more bytes]") {
		t.Errorf("a 100 KiB status message logged as %d bytes, want it cut to 8 KiB and marked", n)
	}
	if len(*global) != 0 {
		t.Errorf("OpenTelemetry's global error handler got %v", *global)
	}
}

// TestOTLPHTTPErrorsLogged: a receiver over HTTP that answers every
// export with 400 gives one warning, then debug lines.
func TestOTLPHTTPErrorsLogged(t *testing.T) {
	ctx := testContext(t)
	global := globalErrors(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := exporters.OTLPHTTP(ctx, strings.TrimPrefix(srv.URL, "http://"), exporters.WithInsecure(), exporters.WithLogger(logger), exporters.WithInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	counter, _ := p.Meter("test").Int64Counter("exports")
	counter.Add(ctx, 1)
	var levels []string
	for range 3 {
		if err := p.ForceFlush(ctx); err != nil {
			t.Fatalf("ForceFlush: %v", err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, l := range logLines(t, &buf) {
		levels = append(levels, l.Level)
	}
	if strings.Join(levels, " ") != "WARN DEBUG DEBUG DEBUG" {
		t.Errorf("levels of the failures of three flushes and the shutdown: %q, want one warning, then debug", levels)
	}
	if len(*global) != 0 {
		t.Errorf("OpenTelemetry's global error handler got %v", *global)
	}
}
