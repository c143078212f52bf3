package rbac

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Type URLs of the audit logger configs.
const (
	xdsTypedStructURL  = "type.googleapis.com/xds.type.v3.TypedStruct"
	udpaTypedStructURL = "type.googleapis.com/udpa.type.v1.TypedStruct"
)

// StdoutLoggerTypeURL is the logger gRPC always has, which writes one JSON
// line per event to standard output (gRFC A59). Its message is linked in,
// so that a resource holding it prints as JSON.
var StdoutLoggerTypeURL = "type.googleapis.com/" + string((&streamv3.StdoutAuditLog{}).ProtoReflect().Descriptor().FullName())

// auditOptions are the parsed audit_logging_options of a rule set.
type auditOptions struct {
	onDeny, onAllow bool
	loggers         []loggerSpec
}

// loggerSpec is one logger to build: the stdout logger when builder is
// nil, else a logger registered with grpc-go's authz/audit package.
type loggerSpec struct {
	builder audit.LoggerBuilder
	config  audit.LoggerConfig
}

// parseAuditOptions parses audit_logging_options as gRPC does (gRFC A59):
// a known condition; the stdout logger, or a logger registered with
// package authz/audit named by the last segment of a TypedStruct's
// type_url and configured by its value; another type is an error unless
// is_optional, and then left out. Errors start with the field path, after
// a dot.
func parseAuditOptions(o *rbacconfigv3.RBAC_AuditLoggingOptions) (auditOptions, error) {
	var out auditOptions
	if o == nil {
		return out, nil
	}
	switch c := o.GetAuditCondition(); c {
	case rbacconfigv3.RBAC_AuditLoggingOptions_NONE:
	case rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY:
		out.onDeny = true
	case rbacconfigv3.RBAC_AuditLoggingOptions_ON_ALLOW:
		out.onAllow = true
	case rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW:
		out.onDeny, out.onAllow = true, true
	default:
		return out, fmt.Errorf(".audit_condition: %d is not NONE, ON_DENY, ON_ALLOW or ON_DENY_AND_ALLOW", int32(c))
	}
	for i, lc := range o.GetLoggerConfigs() {
		spec, ok, err := parseLogger(lc)
		if err != nil {
			return out, fmt.Errorf(".logger_configs[%d].audit_logger%v", i, err)
		}
		if ok {
			out.loggers = append(out.loggers, spec)
		}
	}
	return out, nil
}

// parseLogger parses one logger config; ok is false for an optional one
// of a type gRPC does not know.
func parseLogger(lc *rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig) (spec loggerSpec, ok bool, err error) {
	if lc.GetAuditLogger() == nil {
		return spec, false, errors.New(": missing")
	}
	cfg := lc.GetAuditLogger().GetTypedConfig()
	if cfg == nil {
		return spec, false, errors.New(".typed_config: missing")
	}
	url := cfg.GetTypeUrl()
	switch url {
	case StdoutLoggerTypeURL:
		return spec, true, nil
	case xdsTypedStructURL, udpaTypedStructURL:
		inner, value, err := typedStruct(url, cfg.GetValue())
		if err != nil {
			return spec, false, fmt.Errorf(".typed_config: %v", err)
		}
		name := inner[strings.LastIndex(inner, "/")+1:]
		if name == "" {
			return spec, false, fmt.Errorf(".typed_config: TypedStruct type_url %q names no logger", inner)
		}
		if b := audit.GetLoggerBuilder(name); b != nil {
			js, err := value.MarshalJSON()
			if err == nil {
				spec.config, err = b.ParseLoggerConfig(js)
			}
			if err != nil {
				return spec, false, fmt.Errorf(".typed_config: audit logger %q: %v", name, err)
			}
			spec.builder = b
			return spec, true, nil
		}
		url = inner
	}
	if lc.GetIsOptional() {
		return spec, false, nil
	}
	return spec, false, fmt.Errorf(".typed_config: audit logger type %q is not supported", url)
}

// typedStruct returns the type URL and the value of a TypedStruct of
// either kind, url saying which.
func typedStruct(url string, b []byte) (string, *structpb.Struct, error) {
	var m interface {
		proto.Message
		GetTypeUrl() string
		GetValue() *structpb.Struct
	} = new(udpatypev1.TypedStruct)
	if url == xdsTypedStructURL {
		m = new(xdstypev3.TypedStruct)
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return "", nil, err
	}
	v := m.GetValue()
	if v == nil {
		v = &structpb.Struct{}
	}
	return m.GetTypeUrl(), v, nil
}

// stdoutLogger writes each event as one JSON line in gRPC C-core's form:
// {"grpc_audit_log":{"timestamp":...,"rpc_method":...,"principal":...,
// "policy_name":...,"matched_rule":...,"authorized":...}}, the timestamp
// in RFC 3339 with nanoseconds, UTC.
type stdoutLogger struct {
	w   io.Writer
	now func() time.Time
}

type stdoutEvent struct {
	Timestamp   string `json:"timestamp"`
	RPCMethod   string `json:"rpc_method"`
	Principal   string `json:"principal"`
	PolicyName  string `json:"policy_name"`
	MatchedRule string `json:"matched_rule"`
	Authorized  bool   `json:"authorized"`
}

func (l *stdoutLogger) Log(e *audit.Event) {
	line, err := json.Marshal(struct {
		Event stdoutEvent `json:"grpc_audit_log"`
	}{stdoutEvent{
		Timestamp:   l.now().UTC().Format(time.RFC3339Nano),
		RPCMethod:   e.FullMethodName,
		Principal:   e.Principal,
		PolicyName:  e.PolicyName,
		MatchedRule: e.MatchedRule,
		Authorized:  e.Authorized,
	}})
	if err != nil {
		return // strings and a bool always marshal
	}
	line = append(line, '\n')
	l.w.Write(line) //nolint:errcheck // an audit line that cannot be written does not change the decision
}
