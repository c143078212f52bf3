package transport_test

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/transport/transporttest"
)

// A response's bytes are the stream's until the Conn releases them: the
// handler reads them intact while it takes the response, the Conn releases
// them once it has (the stream may then reuse them), and a response that
// does not parse is released too.
func TestResponseReleased(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			r := newRig(t, delta)
			r.subscribe(cdsURL, "a", "b")
			st := r.srv.Accept(t)
			anyRequest(t, st)
			type seen struct {
				held   int
				values [][]byte // the resources' bytes, copied while the handler had them
				update *transport.Update
			}
			seenc := make(chan seen, 2)
			r.h.setResult(func(u *transport.Update) transport.Result {
				s := seen{held: st.Held(), update: u}
				for _, res := range u.Resources {
					s.values = append(s.values, bytes.Clone(res.Value))
				}
				seenc <- s
				return transport.Result{Valid: len(u.Resources)}
			})
			want := clusters(t, "a", "b")
			respond(cdsURL, "1", "n1", []string{"a", "b"})(&script{t: t, r: r, st: st})
			s := next(t, seenc, "Response")
			if s.held != 1 {
				t.Fatalf("%d responses held while the handler took one, want 1", s.held)
			}
			if len(s.values) != 2 {
				t.Fatalf("%d resources, want 2", len(s.values))
			}
			for i, v := range s.values {
				if !bytes.Equal(v, want[i].GetValue()) || bytes.Contains(v, []byte{transporttest.Released, transporttest.Released}) {
					t.Fatalf("resource %d read by the handler: %x, want %x", i, v, want[i].GetValue())
				}
			}
			st.WaitReleased(t)
			if req := anyRequest(t, st); req.nonce != "n1" {
				t.Fatalf("request after the response: nonce %q, want n1", req.nonce)
			}
			if s.update.Resources != nil {
				t.Fatalf("the Update still shows %d resources once released", len(s.update.Resources))
			}

			st.RespondBytes([]byte{0xff}) // not a message
			e := next(t, r.h.ended, "StreamEnded")
			if status.Code(e.e.Err) != codes.Internal {
				t.Fatalf("a response that does not parse ends the stream with %v, want INTERNAL", e.e.Err)
			}
			st.WaitReleased(t)
		})
	}
}
