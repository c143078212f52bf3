package xdswatch

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// targetPrefix starts every channel argument: xds:///LISTENER, or
// xds://AUTHORITY/LISTENER (gRFC A47).
const targetPrefix = "xds://"

// target is one xds:/// argument or command: a channel whose config and
// RPCs xdswatch prints.
type target struct {
	// arg is the argument as given, which every line of the channel names.
	arg string
	// authority and path are the URI's: "" and "/LISTENER" for
	// xds:///LISTENER.
	authority, path string
}

// isTarget reports whether arg is meant as an xds:// channel, not a
// TYPE:NAME.
func isTarget(arg string) bool { return strings.HasPrefix(arg, targetPrefix) }

// parseTarget parses xds:///LISTENER or xds://AUTHORITY/LISTENER.
func parseTarget(arg string) (target, error) {
	u, err := url.Parse(arg)
	if err != nil || u.Scheme != "xds" {
		return target{}, fmt.Errorf("%q: want xds:///LISTENER", arg)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return target{}, fmt.Errorf("%q: want xds:///LISTENER, without user, query or fragment", arg)
	}
	if strings.TrimPrefix(u.Path, "/") == "" {
		return target{}, fmt.Errorf("%q: empty listener name (want xds:///LISTENER)", arg)
	}
	return target{arg: arg, authority: u.Host, path: u.Path}, nil
}

// key identifies the channel t names, for -xds:///LISTENER.
func (t target) key() string { return targetPrefix + t.authority + t.path }

// listener returns the name of the Listener the channel of t watches,
// from the bootstrap's templates (gRFC A47), as the channel's resolver
// names it.
func (t target) listener(bc *bootstrap.Config) (string, error) {
	name, err := bc.ClientListenerResourceName(t.authority, t.path)
	if err != nil {
		return "", fmt.Errorf("%q: %w", t.arg, err)
	}
	return name, nil
}

// Defaults of the RPC flags.
const (
	// defaultRPCMethod is --rpc-method's default: the health check, which
	// every demo backend answers, with an empty request (every service).
	defaultRPCMethod = "/grpc.health.v1.Health/Check"
	// maxRPCConcurrency bounds --rpc-concurrency.
	maxRPCConcurrency = 1000
	// defaultRPCTimeout is --rpc-timeout's default.
	defaultRPCTimeout = time.Second
)

// rpcConfig is what the --rpc-* flags say about the RPCs made through the
// xds:/// channels.
type rpcConfig struct {
	// interval is --rpc-interval: one RPC per interval for each channel;
	// 0 makes none.
	interval time.Duration
	// method is --rpc-method, "/SERVICE/METHOD".
	method string
	// timeout is --rpc-timeout, the deadline of each RPC.
	timeout time.Duration
	// headers are the --rpc-header values, sent as metadata.
	headers headerFlag
	// concurrency is --rpc-concurrency: the RPC loops of each channel.
	concurrency int
}

// headerFlag collects repeated --rpc-header KEY=VALUE flags.
type headerFlag struct {
	md metadata.MD
}

// String returns the headers as given, for package flag.
func (h *headerFlag) String() string {
	if h == nil {
		return ""
	}
	var parts []string
	for k, vs := range h.md {
		for _, v := range vs {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ",")
}

// Set adds one KEY=VALUE.
func (h *headerFlag) Set(kv string) error {
	key, value, err := parseHeader(kv)
	if err != nil {
		return err
	}
	if h.md == nil {
		h.md = metadata.MD{}
	}
	h.md.Append(key, value)
	return nil
}

// reservedHeaders are the header names gRPC sets itself: it would not send
// a value given for them.
var reservedHeaders = map[string]bool{"content-type": true, "user-agent": true, "te": true}

// parseHeader parses KEY=VALUE as gRPC metadata: the key, in any case, of
// characters [0-9a-z-_.], not one gRPC sets itself; the value printable
// ASCII unless the key ends in "-bin" (then any bytes, sent base64 as gRPC
// does for binary headers).
func parseHeader(kv string) (key, value string, err error) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", fmt.Errorf("%q: want KEY=VALUE", kv)
	}
	key = strings.ToLower(key)
	switch {
	case key == "":
		return "", "", fmt.Errorf("%q: empty header name", kv)
	case strings.Trim(key, "0123456789abcdefghijklmnopqrstuvwxyz-_.") != "":
		return "", "", fmt.Errorf("%q: header name %q has characters outside [0-9a-z-_.]", kv, key)
	case reservedHeaders[key] || strings.HasPrefix(key, "grpc-"):
		return "", "", fmt.Errorf("%q: header %q is set by gRPC itself", kv, key)
	}
	if !strings.HasSuffix(key, "-bin") {
		for i := 0; i < len(value); i++ {
			if value[i] < 0x20 || value[i] > 0x7e {
				return "", "", fmt.Errorf("%q: the value of header %q has a character that is not printable ASCII (use a KEY ending in -bin for binary values)", kv, key)
			}
		}
	}
	return key, value, nil
}

// register adds the --rpc-* flags to fs.
func (r *rpcConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&r.interval, "rpc-interval", 0, "make one RPC per interval through each xds:/// channel")
	fs.StringVar(&r.method, "rpc-method", defaultRPCMethod, "the RPCs' method")
	fs.DurationVar(&r.timeout, "rpc-timeout", defaultRPCTimeout, "deadline of each RPC")
	fs.Var(&r.headers, "rpc-header", "KEY=VALUE metadata of the RPCs (repeatable)")
	fs.IntVar(&r.concurrency, "rpc-concurrency", 1, "RPC loops of each xds:/// channel, each printing its own lines")
}

// check checks the --rpc-* flags of cfg, whose targets and given flags are
// set, and gives the tour its default interval.
func (r *rpcConfig) check(cfg *config) error {
	if cfg.given["rpc-interval"] && r.interval <= 0 {
		return fmt.Errorf("--rpc-interval %v: must be positive", r.interval)
	}
	if r.timeout <= 0 {
		return fmt.Errorf("--rpc-timeout %v: must be positive", r.timeout)
	}
	if r.concurrency < 1 || r.concurrency > maxRPCConcurrency {
		return fmt.Errorf("--rpc-concurrency %d: must be between 1 and %d", r.concurrency, maxRPCConcurrency)
	}
	if service, method, ok := strings.Cut(strings.TrimPrefix(r.method, "/"), "/"); !strings.HasPrefix(r.method, "/") || !ok ||
		service == "" || method == "" || strings.Contains(method, "/") {
		return fmt.Errorf("--rpc-method %q: want /SERVICE/METHOD, such as %s", r.method, defaultRPCMethod)
	}
	if cfg.demoTour {
		if !cfg.given["rpc-interval"] {
			// A few RPCs in every state the tour holds.
			r.interval = max(cfg.demoTourStep/3, time.Millisecond)
		}
		return nil
	}
	if !cfg.given["rpc-interval"] {
		for _, f := range []string{"rpc-method", "rpc-header", "rpc-timeout", "rpc-concurrency"} {
			if cfg.given[f] {
				return fmt.Errorf("--%s without --rpc-interval", f)
			}
		}
		return nil
	}
	if len(cfg.targets) == 0 && !cfg.stdin {
		return errors.New("--rpc-interval: no xds:///LISTENER to send RPCs through")
	}
	return nil
}
