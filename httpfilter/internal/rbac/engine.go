package rbac

import (
	"io"
	"os"
	"time"

	"google.golang.org/grpc/authz/audit"
)

// Engine decides for one RBAC filter instance, with its audit loggers.
// It is safe for concurrent use.
type Engine struct {
	rules   *Rules
	name    string
	loggers []audit.Logger
}

// EngineOptions configure NewEngine.
type EngineOptions struct {
	// PolicyName is the RBAC filter's instance name: the policy name of
	// audit events.
	PolicyName string
	// Stdout is where the stdout audit logger writes, one Write per line;
	// os.Stdout when nil. It must be safe for concurrent use.
	Stdout io.Writer
	// Now is the clock of the stdout logger's timestamps; time.Now when
	// nil.
	Now func() time.Time
}

// NewEngine builds an engine that decides by rules (which must be
// enforced) and runs their audit loggers.
func NewEngine(rules *Rules, o EngineOptions) *Engine {
	e := &Engine{rules: rules, name: o.PolicyName}
	for _, spec := range rules.audit.loggers {
		if spec.builder != nil {
			e.loggers = append(e.loggers, spec.builder.Build(spec.config))
			continue
		}
		w := o.Stdout
		if w == nil {
			w = os.Stdout
		}
		now := o.Now
		if now == nil {
			now = time.Now
		}
		e.loggers = append(e.loggers, &stdoutLogger{w: w, now: now})
	}
	return e
}

// Decision is the engine's decision for one RPC.
type Decision struct {
	// Allowed says whether the RPC may go on.
	Allowed bool
	// Policy is the policy that matched ("" when none did).
	Policy string
	// Deny is the action of the rules: true for DENY.
	Deny bool
}

// Decide decides for r and runs the audit loggers its decision calls
// for.
func (e *Engine) Decide(r *Request) Decision {
	d := Decision{Deny: e.rules.deny}
	if e.rules.matchesPath {
		r.path, r.pathOK = canonicalPath(r.Method)
	}
	matched := false
	for i := range e.rules.policies {
		p := &e.rules.policies[i]
		if matchAny(p.permissions, r) && matchAny(p.principals, r) {
			d.Policy, matched = p.name, true
			break
		}
	}
	d.Allowed = matched != e.rules.deny
	if a := &e.rules.audit; len(e.loggers) > 0 && ((d.Allowed && a.onAllow) || (!d.Allowed && a.onDeny)) {
		ev := &audit.Event{
			FullMethodName: r.Method,
			Principal:      r.SPIFFEID,
			PolicyName:     e.name,
			MatchedRule:    d.Policy,
			Authorized:     d.Allowed,
		}
		for _, l := range e.loggers {
			l.Log(ev)
		}
	}
	return d
}
