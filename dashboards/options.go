package dashboards

import (
	"fmt"
	"regexp"
)

// labelNameRE matches a Prometheus label name that is not reserved.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Option configures the dashboards that [Overview], [DrillDown] and
// [Files] build.
type Option interface{ apply(*config) }

// config is what the options set.
type config struct {
	// group is the name of a label that groups processes above the job,
	// such as cluster or namespace; empty for none.
	group string
	// alerts are the thresholds of the rule file that [Files] writes.
	alerts AlertOptions
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithGroupLabel adds a template variable for label, a label that groups
// the scraped processes above the job (such as "cluster" or "namespace",
// as a relabelling or a remote-write pipeline sets it). Every panel then
// filters by it, and the legends of per-process series name it. The label
// must be a valid Prometheus label name.
func WithGroupLabel(label string) Option {
	return optionFunc(func(c *config) { c.group = label })
}

// WithAlertOptions sets the thresholds and the job selector of the rule
// file that [Files] writes (default: [DefaultAlertOptions]).
func WithAlertOptions(o AlertOptions) Option {
	return optionFunc(func(c *config) { c.alerts = o })
}

// newConfig applies opts over the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{alerts: DefaultAlertOptions()}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.group != "" && !labelNameRE.MatchString(c.group) {
		return c, fmt.Errorf("group label %q is not a Prometheus label name", c.group)
	}
	if c.alerts.RunbookURL == "" {
		return c, fmt.Errorf("no runbook URL: the alerts and panels link to its sections")
	}
	for _, v := range []string{varDatasource, varJob, varInstance, varTarget, varServer, varResourceType, varAuthority} {
		if c.group == v {
			return c, fmt.Errorf("group label %q: the dashboards have a variable of that name already", c.group)
		}
	}
	return c, nil
}
