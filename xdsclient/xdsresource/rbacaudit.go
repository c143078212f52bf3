package xdsresource

import (
	"errors"
	"fmt"
	"strings"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/types/known/structpb"
)

// stdoutAuditLoggerTypeURL is the audit logger that gRPC always has: it
// writes each audit event to standard output (gRFC A59).
const stdoutAuditLoggerTypeURL = TypeURLPrefix + "envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog"

// validateAuditLogging checks the audit_logging_options of RBAC rules
// whose action is enforced, found at at, as gRPC does when it runs audit
// loggers (gRFC A59): the audit condition must be known, and every logger
// must have a typed_config. A logger gRPC does not know is rejected unless
// it is_optional, then ignored. gRPC knows the stdout logger and, in a
// TypedStruct, the loggers registered with gRPC in this program, named by
// the last path segment of the TypedStruct's type_url, whose config parser
// must accept the TypedStruct's value as JSON.
func validateAuditLogging(opts *rbacconfigv3.RBAC_AuditLoggingOptions, at string) error {
	if opts == nil {
		return nil
	}
	switch c := opts.GetAuditCondition(); c {
	case rbacconfigv3.RBAC_AuditLoggingOptions_NONE, rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY,
		rbacconfigv3.RBAC_AuditLoggingOptions_ON_ALLOW, rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW:
	default:
		return fmt.Errorf("%s.audit_condition: %d is not NONE, ON_DENY, ON_ALLOW or ON_DENY_AND_ALLOW", at, int32(c))
	}
	for i, lc := range opts.GetLoggerConfigs() {
		if err := validateAuditLogger(lc); err != nil {
			return fmt.Errorf("%s.logger_configs[%d].audit_logger%v", at, i, err)
		}
	}
	return nil
}

// validateAuditLogger checks one logger config. Errors start with the
// path below audit_logger, or with ": ".
func validateAuditLogger(lc *rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig) error {
	if lc.GetAuditLogger() == nil {
		return errors.New(": missing")
	}
	cfg := lc.GetAuditLogger().GetTypedConfig()
	if cfg == nil {
		return errors.New(".typed_config: missing")
	}
	url := cfg.GetTypeUrl()
	switch url {
	case stdoutAuditLoggerTypeURL:
		return nil
	case xdsTypedStructURL, udpaTypedStructURL:
		inner, value, err := typedStructPolicy(url, cfg.GetValue())
		if err != nil {
			return fmt.Errorf(".typed_config: %v", err)
		}
		name := inner[strings.LastIndex(inner, "/")+1:]
		if name == "" {
			return fmt.Errorf(".typed_config: TypedStruct type_url %q names no logger", inner)
		}
		if b := audit.GetLoggerBuilder(name); b != nil {
			return parseAuditLoggerConfig(b, value)
		}
		url = inner
	}
	if lc.GetIsOptional() {
		return nil
	}
	return fmt.Errorf(".typed_config: audit logger type %q is not supported", url)
}

// parseAuditLoggerConfig has b parse value, the config of a logger in a
// TypedStruct, as JSON.
func parseAuditLoggerConfig(b audit.LoggerBuilder, value *structpb.Struct) error {
	if value == nil {
		value = &structpb.Struct{}
	}
	js, err := value.MarshalJSON()
	if err == nil {
		_, err = b.ParseLoggerConfig(js)
	}
	if err != nil {
		return fmt.Errorf(".typed_config: audit logger %q: %v", b.Name(), err)
	}
	return nil
}
