// Package hooksettest checks a hook struct's compose func, the one made
// with package hookset: that it joins every field.
package hooksettest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// EveryField reports on t every field of the hook struct H that compose
// does not join: each field of H must be a func of one argument; composed
// from two structs that set every field (with an empty struct and a nil
// one between them), each field must call the first struct's func then
// the second's; composed from empty structs alone, each field must stay
// nil (a nil result counts as all nil). It reports with t.Errorf only.
func EveryField[H any](t testing.TB, compose func([]*H) *H) {
	t.Helper()
	typ := reflect.TypeFor[H]()
	if typ.Kind() != reflect.Struct {
		t.Errorf("%v is not a struct", typ)
		return
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() != reflect.Func || f.Type.NumIn() != 1 || f.Type.NumOut() != 0 {
			t.Errorf("%v.%s is a %v, not a func of one argument", typ, f.Name, f.Type)
			return
		}
	}
	var calls []string
	set := func(who string) *H {
		h := new(H)
		v := reflect.ValueOf(h).Elem()
		for i := range typ.NumField() {
			name := typ.Field(i).Name
			v.Field(i).Set(reflect.MakeFunc(typ.Field(i).Type, func([]reflect.Value) []reflect.Value {
				calls = append(calls, fmt.Sprintf("%s.%s", who, name))
				return nil
			}))
		}
		return h
	}
	c := compose([]*H{set("a"), new(H), nil, set("b")})
	if c == nil {
		t.Errorf("compose of two %v that set every field is nil", typ)
		return
	}
	v := reflect.ValueOf(c).Elem()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if v.Field(i).IsNil() {
			t.Errorf("%v.%s not composed", typ, f.Name)
			continue
		}
		calls = nil
		v.Field(i).Call([]reflect.Value{reflect.Zero(f.Type.In(0))})
		if want := []string{"a." + f.Name, "b." + f.Name}; !slices.Equal(calls, want) {
			t.Errorf("composed %v.%s called %v, want %v", typ, f.Name, calls, want)
		}
	}
	if empty := compose([]*H{new(H), new(H)}); empty != nil {
		v := reflect.ValueOf(empty).Elem()
		for i := range typ.NumField() {
			if !v.Field(i).IsNil() {
				t.Errorf("%v.%s set though no struct sets it", typ, typ.Field(i).Name)
			}
		}
	}
}
