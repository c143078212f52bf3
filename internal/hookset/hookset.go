// Package hookset composes hook structs in the style of
// net/http/httptrace: several structs of optional funcs, attached by
// different observers, become one whose every func calls the funcs the
// structs set, in the order the structs were given. The composition is
// made once, when hooks are attached, so that an event costs a single nil
// check however many observers there are, and a func no struct sets stays
// nil. xdsclient.Hooks, xdsgrpc.Hooks and xdsserver.Hooks are composed
// with it.
package hookset

// Join returns a func that calls, in the order of hs, the func that field
// returns for each h of hs: nil when no h sets one, that func itself when
// only one does. Nil entries of hs are skipped. Join is called once per
// field, so that each field of the composed struct is one call:
//
//	c.Picked = hookset.Join(hs, func(h *Hooks) func(PickInfo) { return h.Picked })
func Join[H, I any](hs []*H, field func(*H) func(I)) func(I) {
	var fs []func(I)
	for _, h := range hs {
		if h == nil {
			continue
		}
		if f := field(h); f != nil {
			fs = append(fs, f)
		}
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(info I) {
		for _, f := range fs {
			f(info)
		}
	}
}
