package bootstrap

import (
	"fmt"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
)

// authorityPrefix is how every client Listener template of the authority
// name starts: "xdstp://<percent-encoded name>/".
func authorityPrefix(name string) string {
	return "xdstp://" + xdstp.EscapeAuthority(name) + "/"
}

// ClientListenerResourceName returns the name of the Listener that a client
// channel to the target "xds://<authority>/<path>" subscribes to (gRFC A47).
// authority is "" when the target has none; one leading "/" is removed from
// path to give the host.
//
// With an authority, its ClientListenerResourceNameTemplate is used and
// "%s" is replaced by the percent-encoded host; the authority must be in
// Authorities. Without one, ClientDefaultListenerResourceNameTemplate is
// used, and the host is percent-encoded only when the template starts with
// "xdstp:"; if the name then starts with "xdstp:", its authority must be in
// Authorities.
func (c *Config) ClientListenerResourceName(authority, path string) (string, error) {
	host := strings.TrimPrefix(path, "/")
	if authority != "" {
		a, ok := c.Authorities[authority]
		if !ok {
			return "", bounded(fmt.Errorf("authority %s of target %s not found in xds bootstrap", quote(authority), quote("xds://"+authority+"/"+host)))
		}
		tmpl := ""
		if a != nil {
			tmpl = a.ClientListenerResourceNameTemplate
		}
		if tmpl == "" {
			tmpl = authorityPrefix(authority) + "envoy.config.listener.v3.Listener/%s"
		}
		return strings.ReplaceAll(tmpl, "%s", xdstp.EscapePath(host)), nil
	}
	tmpl := c.ClientDefaultListenerResourceNameTemplate
	if tmpl == "" {
		tmpl = DefaultClientListenerResourceNameTemplate
	}
	return c.fillTemplate(tmpl, host)
}

// ServerListenerResourceName returns the name of the Listener that an
// xDS-enabled server listening on addr (such as "0.0.0.0:8080" or
// "[::]:8080") subscribes to, from ServerListenerResourceNameTemplate
// (gRFCs A36, A47). The address replaces "%s", percent-encoded when the
// template starts with "xdstp:"; then the name's authority must be in
// Authorities. An unset template is an error.
func (c *Config) ServerListenerResourceName(addr string) (string, error) {
	if c.ServerListenerResourceNameTemplate == "" {
		return "", fmt.Errorf("xds bootstrap has no server_listener_resource_name_template")
	}
	return c.fillTemplate(c.ServerListenerResourceNameTemplate, addr)
}

// fillTemplate replaces "%s" in tmpl by value, percent-encoded for xdstp:
// templates, and checks the authority of an xdstp: result.
func (c *Config) fillTemplate(tmpl, value string) (string, error) {
	if xdstp.Is(tmpl) {
		value = xdstp.EscapePath(value)
	}
	name := strings.ReplaceAll(tmpl, "%s", value)
	if xdstp.Is(name) {
		if _, err := c.authorityOf(name); err != nil {
			return "", bounded(err)
		}
	}
	return name, nil
}
