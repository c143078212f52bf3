package routing

import (
	"regexp"

	"github.com/cespare/xxhash/v2"
)

// rewrite is a hash policy's regex_rewrite: its pattern and its
// substitution, read as RE2 reads a rewrite string, which is what the
// xDS API names (RegexMatchAndSubstitute: "\1" is capture group 1) and
// what gRPC C-core runs (RE2::GlobalReplace). Go's own templates ("$1")
// mean something else: there "\1" is two literal bytes, and "$" is not
// literal.
//
// Every non-overlapping match of the pattern is replaced, as
// RE2::GlobalReplace replaces them: an empty match right after a match is
// not one, and the text between matches is kept. In the substitution,
// "\0" to "\9" are the match and its groups (empty when a group did not
// take part), "\\" is a backslash, and any other byte is itself.
//
// What RE2 does with a substitution it cannot use is kept too:
//   - one that names a group the pattern does not have replaces nothing,
//     and the value is hashed as it is;
//   - a backslash followed by anything else (or by nothing) ends the
//     substitution there: each match is replaced by what comes before it.
//
// The rewritten value is never built: it is written piece by piece to
// the hash, so a substitution of a megabyte that matches at every byte of
// a header costs time, not a copy of that size per RPC.
type rewrite struct {
	re     *regexp.Regexp
	pieces []piece
	none   bool // the substitution names a group the pattern lacks
}

// piece is a literal of the substitution (group < 0) or a capture group.
type piece struct {
	lit   string
	group int
}

func newRewrite(re *regexp.Regexp, subst string) *rewrite {
	r := &rewrite{re: re}
	// The groups named are counted over the whole substitution, past an
	// invalid escape too, as RE2's MaxSubmatch counts them.
	most := 0
	for i := 0; i < len(subst); i++ {
		if subst[i] == '\\' {
			i++
			if i < len(subst) && isDigit(subst[i]) {
				most = max(most, int(subst[i]-'0'))
			}
		}
	}
	r.none = most > re.NumSubexp()
	lit := make([]byte, 0, len(subst))
	flush := func() {
		if len(lit) > 0 {
			r.pieces = append(r.pieces, piece{lit: string(lit), group: -1})
			lit = lit[:0]
		}
	}
	for i := 0; i < len(subst); i++ {
		c := subst[i]
		if c != '\\' {
			lit = append(lit, c)
			continue
		}
		i++
		switch {
		case i < len(subst) && isDigit(subst[i]):
			flush()
			r.pieces = append(r.pieces, piece{group: int(subst[i] - '0')})
		case i < len(subst) && subst[i] == '\\':
			lit = append(lit, '\\')
		default:
			flush()
			return r // an invalid escape: the rest is not written
		}
	}
	flush()
	return r
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// writeTo writes v, rewritten, to w.
func (r *rewrite) writeTo(w *xxhash.Digest, v string) {
	if r.none {
		w.WriteString(v)
		return
	}
	last := 0
	for _, m := range r.re.FindAllStringSubmatchIndex(v, -1) {
		w.WriteString(v[last:m[0]])
		for _, p := range r.pieces {
			switch {
			case p.group < 0:
				w.WriteString(p.lit)
			case m[2*p.group] >= 0:
				w.WriteString(v[m[2*p.group]:m[2*p.group+1]])
			}
		}
		last = m[1]
	}
	w.WriteString(v[last:])
}
