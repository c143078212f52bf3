package xdswatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// TestLogLevelsAndFormats checks the loggers the log flags make: each
// level lets through what is at it or above, as slog's text or JSON
// handler writes it.
func TestLogLevelsAndFormats(t *testing.T) {
	t.Parallel()
	for _, format := range []string{logText, logJSON} {
		for level, lets := range map[string][]string{
			"debug": {"DEBUG", "INFO", "WARN", "ERROR"},
			"info":  {"INFO", "WARN", "ERROR"},
			"warn":  {"WARN", "ERROR"},
			"error": {"ERROR"},
		} {
			var buf bytes.Buffer
			l := newLogger(&buf, level, format)
			l.Debug("d")
			l.Info("i")
			l.Warn("w")
			l.Error("e")
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != len(lets) {
				t.Errorf("%s %s: %q, want %v", format, level, lines, lets)
				continue
			}
			for i, line := range lines {
				got := ""
				if format == logJSON {
					var v struct{ Level string }
					if err := json.Unmarshal([]byte(line), &v); err != nil {
						t.Errorf("%s %s: %q is not JSON: %v", format, level, line, err)
					}
					got = v.Level
				} else if m := regexp.MustCompile(`^time=\S+ level=(\w+) `).FindStringSubmatch(line); m != nil {
					got = m[1]
				}
				if got != lets[i] {
					t.Errorf("%s %s: line %q, want level %s", format, level, line, lets[i])
				}
			}
		}
	}
}

// TestLogFlags runs xdswatch against an xDS server that is not there:
// with --log-format json and --log-level debug, the client's warning of
// the first failure and the debug lines of its retries come as JSON lines
// on standard error; by default, a text line at WARN.
func TestLogFlags(t *testing.T) {
	t.Parallel()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(bootstrap, []byte(fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": "n"}}`,
		xdstest.ClosedAddr(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("json debug", func(t *testing.T) {
		t.Parallel()
		p := startRun(t, "--bootstrap", bootstrap, "--output", "json", "--log-format", "json", "--log-level", "debug", "cds:c1")
		seen := map[string]bool{}
		for !seen["WARN"] || !seen["DEBUG"] {
			line := p.errLine(t)
			var v struct {
				Level, Msg, Server string
			}
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("a log line that is not JSON: %q (%v)", line, err)
			}
			if v.Server == "" {
				t.Errorf("%q names no server", line)
			}
			seen[v.Level] = true
		}
		p.interrupt(t)
	})
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		p := startRun(t, "--bootstrap", bootstrap, "--output", "json", "cds:c1")
		if line := p.errLine(t); !regexp.MustCompile(`^time=\S+ level=WARN msg=`).MatchString(line) {
			t.Errorf("first log line %q: want slog's text handler at WARN", line)
		}
		p.interrupt(t)
	})
}

// TestVersionFlag: --version prints one line with the module and the
// revision, and exits 0 without starting anything.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	p := startRun(t, "--version", "--output", "json", "cds:ignored")
	line := p.line(t)
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit status %d, want 0", code)
	}
	if !regexp.MustCompile(`^xdswatch \S+ github\.com/xdslens/xdslens revision \S+( \(modified\))? \S+$`).MatchString(line) {
		t.Errorf("--version printed %q", line)
	}
	if lines := drain(p.stdout.lines); len(lines) > 0 {
		t.Errorf("more output after the version: %q", lines)
	}
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("stderr: %q", lines)
	}
}

// TestVersionLine reads the build information of binaries built in every
// way, and of a hostile one.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4f2a9c0d"}, {Key: "vcs.modified", Value: "false"}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v1.2.0"}, Settings: vcs},
			true, "xdswatch v1.2.0 github.com/xdslens/xdslens revision 4f2a9c0d go1.26.8"},
		{"built in a modified tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "4f2a9c0d"}, {Key: "vcs.modified", Value: "true"}}},
			true, "xdswatch (devel) github.com/xdslens/xdslens revision 4f2a9c0d (modified) go1.26.8"},
		{"a dependency of another program", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/tool", Version: "v0.1.0"},
			Deps: []*debug.Module{{Path: "google.golang.org/grpc", Version: "v1.85.0"}, {Path: modulePath, Version: "v1.3.1"}}},
			true, "xdswatch v1.3.1 github.com/xdslens/xdslens revision unknown go1.26.8"},
		{"go install @commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v0.3.1-0.20261128101500-4f2a9c0d1e2b"}},
			true, "xdswatch v0.3.1-0.20261128101500-4f2a9c0d1e2b github.com/xdslens/xdslens revision 4f2a9c0d1e2b go1.26.8"},
		{"no build information", nil, false, "xdswatch unknown github.com/xdslens/xdslens revision unknown unknown"},
		{"values that are not one word", &debug.BuildInfo{GoVersion: "go1.26.8\nx", Main: debug.Module{Path: modulePath, Version: " "},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "a b\nc"}}},
			true, "xdswatch unknown github.com/xdslens/xdslens revision a_b_c go1.26.8_x"},
	} {
		if got := versionLine(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
