package xdsconfig

import (
	"reflect"
	"slices"
	"strings"
)

// Changes says what differs between two Configs, for a hook or a log line
// that reports a new config with what changed.
type Changes struct {
	// Listener: the Listener resource is another one (a new version was
	// received), or the listener name differs.
	Listener bool
	// RouteConfig: the route configuration is another resource, or its name
	// differs (an inline one comes with each Listener).
	RouteConfig bool
	// VirtualHost: the virtual host in use says something else (another one
	// was chosen, or its content changed).
	VirtualHost bool
	// Added, Removed and Changed name, sorted, the cluster slots only the
	// new config has, only the old one has, and both have but differ.
	Added, Removed, Changed []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return !c.Listener && !c.RouteConfig && !c.VirtualHost && len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Changed) == 0
}

// String describes c in one line, such as
// "route config, virtual host, clusters +[b] -[a]", or "nothing".
func (c Changes) String() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{c.Listener, "listener"}, {c.RouteConfig, "route config"}, {c.VirtualHost, "virtual host"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	var cl []string
	for _, p := range []struct {
		sign  string
		names []string
	}{{"+", c.Added}, {"-", c.Removed}, {"~", c.Changed}} {
		if len(p.names) > 0 {
			cl = append(cl, p.sign+"["+strings.Join(p.names, " ")+"]")
		}
	}
	if len(cl) > 0 {
		parts = append(parts, "clusters "+strings.Join(cl, " "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Diff returns what changed from config from to config to; a nil config
// is an empty one (everything in to is added). Resources are compared by identity (the
// manager shares a resource between configs until a new version of it
// comes), the virtual host by content, and cluster slots field by field,
// their resources by identity.
func Diff(from, to *Config) Changes {
	if from == nil {
		from = &Config{}
	}
	if to == nil {
		to = &Config{}
	}
	c := Changes{
		Listener:    from.ListenerName != to.ListenerName || from.Listener != to.Listener,
		RouteConfig: from.RouteConfigName != to.RouteConfigName || from.RouteConfig != to.RouteConfig,
		VirtualHost: from.VirtualHost != to.VirtualHost && (from.VirtualHost == nil || to.VirtualHost == nil ||
			!reflect.DeepEqual(*from.VirtualHost, *to.VirtualHost)),
	}
	present := 0
	for name, n := range to.Clusters {
		switch o := from.Clusters[name]; {
		case o == nil:
			c.Added = append(c.Added, name)
		case !sameSlot(o, n):
			present++
			c.Changed = append(c.Changed, name)
		default:
			present++
		}
	}
	if present < len(from.Clusters) {
		// Some slot of from is not in to.
		for name := range from.Clusters {
			if to.Clusters[name] == nil {
				c.Removed = append(c.Removed, name)
			}
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	slices.Sort(c.Changed)
	return c
}
