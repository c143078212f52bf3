package rbac

import "strings"

// canonicalPath returns the path that url_path matchers compare, as gRPC
// C-core canonicalizes a request's :path before its authorization
// matchers see it: percent-escapes decoded once, a leading "/" added when
// missing, empty and "." segments dropped, each ".." segment removing the
// one before it, segments joined by single slashes. ok is false when the
// path is empty, decodes to nothing, or climbs above the root: then no
// url_path matcher matches. A path already in that form is returned as
// it is, without allocating.
func canonicalPath(raw string) (path string, ok bool) {
	if raw == "" {
		return "", false
	}
	if isCanonical(raw) {
		return raw, true
	}
	decoded := percentDecode(raw)
	if decoded == "" {
		return "", false
	}
	segments := make([]string, 0, strings.Count(decoded, "/")+1)
	for seg := range strings.SplitSeq(strings.TrimPrefix(decoded, "/"), "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(segments) == 0 {
				return "", false
			}
			segments = segments[:len(segments)-1]
		default:
			segments = append(segments, seg)
		}
	}
	return "/" + strings.Join(segments, "/"), true
}

// isCanonical reports whether p is a path canonicalPath leaves as it is:
// it starts with "/", has no percent-escape, and every segment after the
// first slash is neither empty (but in the path "/") nor "." nor "..".
func isCanonical(p string) bool {
	if p[0] != '/' || strings.IndexByte(p, '%') >= 0 {
		return false
	}
	if p == "/" {
		return true
	}
	start := 1 // of the current segment
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if seg := p[start:i]; seg == "" || seg == "." || seg == ".." {
			return false
		}
		start = i + 1
	}
	return true
}

// percentDecode decodes each "%" followed by two hexadecimal digits into
// the byte they give, once; any other "%" stays as it is.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				b.WriteByte(byte(hi<<4 | lo))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unhex returns the value of the hexadecimal digit c, -1 when c is not
// one.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
