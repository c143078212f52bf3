// Package promtest runs a real Prometheus (Debian's prometheus package) on
// loopback for tests, and queries it through its HTTP API: the tests that
// check what an operator would see query what Prometheus scraped, not the
// exporter's text.
package promtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// Deadline bounds every wait on Prometheus.
const Deadline = 90 * time.Second

// Binary returns the path of the prometheus binary, or skips the test.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not found: install Debian's prometheus package (.ci/run does)")
	}
	return p
}

// Process is a command a test started; Stop ends it by its own PID.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	// Done is closed when the process has ended; Err is then how.
	Done chan struct{}
	Err  error
	once sync.Once
}

// Start starts cmd, named name in messages, and stops it when the test
// ends.
func Start(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, Done: make(chan struct{})}
	go func() {
		p.Err = cmd.Wait()
		close(p.Done)
	}()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Stop sends SIGTERM to the process and waits for it to end, killing it
// after 10s. It reports, once, a process that had ended by itself or
// exits with an error.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	p.once.Do(func() {
		select {
		case <-p.Done:
			t.Errorf("%s (pid %d) had ended by itself: %v", p.Name, p.Cmd.Process.Pid, p.Err)
			return
		default:
		}
		_ = syscall.Kill(p.Cmd.Process.Pid, syscall.SIGTERM)
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case <-p.Done:
			if p.Err != nil {
				t.Errorf("%s (pid %d) exited after SIGTERM with %v", p.Name, p.Cmd.Process.Pid, p.Err)
			}
		case <-timer.C:
			_ = syscall.Kill(p.Cmd.Process.Pid, syscall.SIGKILL)
			<-p.Done
			t.Errorf("%s (pid %d) did not end within 10s of SIGTERM", p.Name, p.Cmd.Process.Pid)
		}
	})
}

// Server is a Prometheus the test queries.
type Server struct {
	// Process is the process whose end means Prometheus is gone.
	*Process
	// Base is Prometheus's URL, http://host:port.
	Base string
}

// Run starts Prometheus (bin) on a free loopback address, with the
// prometheus.yml that config returns for that address (a configuration
// may scrape Prometheus itself) written into dir and its data under dir,
// and returns once Prometheus is ready. Its log is shown if the test
// fails.
//
// The address is one that was free a moment before Prometheus binds it;
// another listener can take it in that moment (tests that run in parallel
// open listeners all the time). Prometheus then ends at once, saying the
// address is in use, and Run starts it again on another address.
func Run(t testing.TB, bin, dir string, config func(addr string) string) *Server {
	t.Helper()
	return run(t, bin, dir, config, xdstest.ClosedAddr)
}

// run is Run, with freeAddr giving each attempt a loopback address where
// nothing listens.
func run(t testing.TB, bin, dir string, config func(addr string) string, freeAddr func(testing.TB) string) *Server {
	t.Helper()
	const attempts = 5
	for i := 1; ; i++ {
		s, log := start(t, bin, dir, config, freeAddr(t))
		err := s.waitReady()
		if err == nil {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("prometheus log:\n%s", log.String())
				}
			})
			return s
		}
		if i == attempts || !strings.Contains(log.String(), "address already in use") {
			t.Fatalf("prometheus on %s: %v\n%s", s.Base, err, log.String())
		}
		t.Logf("prometheus: %s was taken before Prometheus could bind it; another address", s.Base)
	}
}

// start starts one Prometheus process for Run, listening on addr.
func start(t testing.TB, bin, dir string, config func(addr string) string, addr string) (*Server, *xdstest.SyncBuffer) {
	t.Helper()
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(config(addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &xdstest.SyncBuffer{}
	cmd := exec.Command(bin,
		"--config.file="+file,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	p := &Process{Name: "prometheus", Cmd: cmd, Done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	go func() {
		p.Err = cmd.Wait()
		close(p.Done)
	}()
	s := &Server{Process: p, Base: "http://" + addr}
	t.Cleanup(func() {
		select {
		case <-p.Done: // an attempt that ended by itself; Run reported it
		default:
			p.Stop(t)
		}
	})
	return s, log
}

// waitReady waits until Prometheus answers that it is ready, and fails
// if the process ends first or the deadline passes.
func (s *Server) waitReady() error {
	end := time.Now().Add(Deadline)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// A request to a port that another listener holds may never be
	// answered: each is bounded.
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-s.Done:
			return fmt.Errorf("ended: %v", s.Err)
		default:
		}
		resp, err := client.Get(s.Base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// The answer is this process's only if it still runs.
				select {
				case <-s.Done:
					return fmt.Errorf("ended: %v", s.Err)
				default:
					return nil
				}
			}
		}
		if time.Now().After(end) {
			return fmt.Errorf("not ready after %v (last: %v)", Deadline, err)
		}
		select {
		case <-tick.C:
		case <-s.Done:
			return fmt.Errorf("ended: %v", s.Err)
		}
	}
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Float returns the sample's value.
func (s Sample) Float() float64 {
	str, _ := s.Value[1].(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// errNotReady is the error of a query that Prometheus refused while
// starting.
var errNotReady = errors.New("prometheus is not ready")

// Query evaluates expr at the current time; the result must be an instant
// vector.
func (s *Server) Query(expr string) ([]Sample, error) {
	var out []Sample
	if err := s.get("/api/v1/query?query="+url.QueryEscape(expr), "vector", &out); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	return out, nil
}

// RangeSeries is one series of a range query.
type RangeSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// QueryRange evaluates expr from start to end every step.
func (s *Server) QueryRange(expr string, start, end time.Time, step time.Duration) ([]RangeSeries, error) {
	q := url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {step.String()},
	}
	var out []RangeSeries
	if err := s.get("/api/v1/query_range?"+q.Encode(), "matrix", &out); err != nil {
		return nil, fmt.Errorf("query_range %q: %w", expr, err)
	}
	return out, nil
}

// get reads an API answer of resultType into result.
func (s *Server) get(path, resultType string, result any) error {
	resp, err := http.Get(s.Base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Prometheus answers 503 until it has started.
		return errNotReady
	}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return errors.New(body.Error)
	}
	if body.Data.ResultType != resultType {
		return fmt.Errorf("result type %s, want %s", body.Data.ResultType, resultType)
	}
	return json.Unmarshal(body.Data.Result, result)
}

// WaitUntil evaluates expr every 200ms until ok accepts the result, and
// fails the test at the deadline or on a query error other than
// Prometheus not being up yet.
func (s *Server) WaitUntil(t testing.TB, what, expr string, ok func([]Sample) bool) []Sample {
	t.Helper()
	end := time.Now().Add(Deadline)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last []Sample
	var lastErr error
	for {
		r, err := s.Query(expr)
		if err == nil && ok(r) {
			return r
		}
		last, lastErr = r, err
		if err != nil && !errors.Is(err, errNotReady) && !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(end) {
			t.Fatalf("%s: %q still gives %v (%v) after %v", what, expr, last, lastErr, Deadline)
		}
		select {
		case <-tick.C:
		case <-s.Done:
			t.Fatalf("%s: %s ended: %v", what, s.Name, s.Err)
		}
	}
}

// WaitFor waits until expr returns a series.
func (s *Server) WaitFor(t testing.TB, what, expr string) {
	t.Helper()
	s.WaitUntil(t, what, expr, func(r []Sample) bool { return len(r) > 0 })
}

// ExpectLabels waits until the series of expr carry label with at least
// each of values (with no values: until every series has the label).
func (s *Server) ExpectLabels(t testing.TB, what, expr, label string, values ...string) {
	t.Helper()
	s.WaitUntil(t, what, expr, func(r []Sample) bool {
		if len(r) == 0 {
			return false
		}
		if len(values) == 0 {
			for _, s := range r {
				if s.Metric[label] == "" {
					return false
				}
			}
			return true
		}
		got := LabelValues(r, label)
		for _, v := range values {
			if !got[v] {
				return false
			}
		}
		return true
	})
}

// LabelValues returns the values of label among r.
func LabelValues(r []Sample, label string) map[string]bool {
	out := map[string]bool{}
	for _, s := range r {
		if v, ok := s.Metric[label]; ok {
			out[v] = true
		}
	}
	return out
}

// WaitForAlerts waits until Prometheus reports each of names firing.
func (s *Server) WaitForAlerts(t testing.TB, names []string) {
	t.Helper()
	end := time.Now().Add(Deadline)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		firing, err := s.Firing()
		if err != nil {
			t.Fatalf("alerts: %v", err)
		}
		var missing []string
		for _, n := range names {
			if !firing[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("alerts not firing after %v: %v (firing: %v)", Deadline, missing, firing)
		}
		<-tick.C
	}
}

// Firing returns the names of the alerts Prometheus reports firing.
func (s *Server) Firing() (map[string]bool, error) {
	resp, err := http.Get(s.Base + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range body.Data.Alerts {
		if a.State == "firing" {
			out[a.Labels["alertname"]] = true
		}
	}
	return out, nil
}
