package xdswatch

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"runtime/debug"
	"strings"
)

// Log levels accepted by --log-level, with slog's.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// Log formats accepted by --log-format.
const (
	// logText is slog's text handler: key=value pairs.
	logText = "text"
	// logJSON is slog's JSON handler: one object per line.
	logJSON = "json"
)

// checkLogFlags checks --log-level and --log-format.
func checkLogFlags(level, format string) error {
	if _, ok := logLevels[level]; !ok {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	if format != logText && format != logJSON {
		return fmt.Errorf("--log-format %q: want text or json", format)
	}
	return nil
}

// newLogger returns the logger of the xDS client and the exporters, on w,
// at level (a --log-level) with the handler of format (a --log-format),
// both checked by checkLogFlags.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[level]}
	if format == logJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// modulePath is the module xdswatch is part of.
const modulePath = "github.com/xdslens/xdslens"

// versionLine returns what --version prints: the version of the module
// xdswatch was built from and the VCS revision it was built at, from the
// build information of the binary (ok false when it has none):
//
//	xdswatch v1.2.0 github.com/xdslens/xdslens revision 4f2a... (modified) go1.26.8
//
// "(devel)" is the version of a binary built in the module's own tree,
// "unknown" a revision the build did not record (go run, go test, a build
// outside a VCS checkout or with -buildvcs=false, or go install of a
// tagged version: the module proxy's copy has no VCS information, but a
// pseudo-version names its revision).
func versionLine(bi *debug.BuildInfo, ok bool) string {
	var version, revision, goVersion string
	modified := false
	if ok && bi != nil {
		goVersion = bi.GoVersion
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				// Built as a dependency of another main module.
				version = d.Version
			}
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if m := pseudoVersion.FindStringSubmatch(version); revision == "" && m != nil {
		// A build from the module proxy records no VCS information; a
		// pseudo-version names the revision.
		revision = m[1]
	}
	line := fmt.Sprintf("xdswatch %s %s revision %s", word(version), modulePath, word(revision))
	if modified {
		line += " (modified)"
	}
	return line + " " + word(goVersion)
}

// pseudoVersion matches a module pseudo-version, such as
// v0.0.0-20261128101500-4f2a9c0d1e2b, and captures its revision.
var pseudoVersion = regexp.MustCompile(`[.-]\d{14}-([0-9a-f]{12})(\+incompatible)?$`)

// word returns a value of the build information as one word, whatever it
// holds, "unknown" for none.
func word(s string) string {
	if w := strings.Join(strings.Fields(s), "_"); w != "" {
		return w
	}
	return "unknown"
}
