package rbac

import (
	"context"
	"encoding/base64"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Request is what the engine knows of one RPC. It is meant to live on the
// caller's stack: deciding does not keep it.
type Request struct {
	// Ctx carries the RPC's incoming metadata.
	Ctx context.Context
	// Method is the full method name, "/pkg.Service/Method".
	Method string
	// Local is the server's address of the connection, Remote the
	// peer's, IPv4-mapped addresses unmapped.
	Local, Remote netip.AddrPort
	// TLS says whether the connection uses TLS.
	TLS bool
	// Principals are the names an authenticated principal_name is matched
	// against (see the package documentation).
	Principals []string
	// SPIFFEID is the peer's SPIFFE ID, "" when none: an audit event's
	// principal.
	SPIFFEID string

	// path is Method as url_path matchers see it, worked out by Decide
	// for rules that have one; pathOK is false when no url_path matcher
	// may match (canonicalPath).
	path   string
	pathOK bool
	// headers remembers the headers read so far, so that policies reading
	// the same header copy it once.
	headers [4]headerValue
	nHeader int
}

type headerValue struct {
	name, value string
	present     bool
}

// header returns the value of the request header name (lower case, "host"
// already turned into ":authority") as matchers see it.
func (r *Request) header(name string) (string, bool) {
	switch name {
	case ":path":
		return r.Method, true
	case ":method":
		return "POST", true
	case "te":
		return "", false
	}
	for i := range r.nHeader {
		if h := &r.headers[i]; h.name == name {
			return h.value, h.present
		}
	}
	var vs []string
	if r.Ctx != nil {
		vs = metadata.ValueFromIncomingContext(r.Ctx, name)
	}
	v, present := joinValues(vs, strings.HasSuffix(name, "-bin"))
	if r.nHeader < len(r.headers) {
		r.headers[r.nHeader] = headerValue{name: name, value: v, present: present}
		r.nHeader++
	}
	return v, present
}

// joinValues joins the values of a header with ",", each in base64 when
// the header is binary.
func joinValues(vs []string, binary bool) (string, bool) {
	switch {
	case len(vs) == 0:
		return "", false
	case len(vs) == 1 && !binary:
		return vs[0], true
	}
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		if binary {
			v = base64.RawStdEncoding.EncodeToString([]byte(v))
		}
		b.WriteString(v)
	}
	return b.String(), true
}
