package xdsclient

import (
	"reflect"
	"testing"
)

// compose joins every field of Hooks: each composed func calls the funcs
// of all the Hooks that set it, in order, and a field none sets stays nil.
func TestComposeEveryField(t *testing.T) {
	typ := reflect.TypeFor[Hooks]()
	var calls []string
	mk := func(who string) *Hooks {
		h := &Hooks{}
		v := reflect.ValueOf(h).Elem()
		for i := range typ.NumField() {
			f := typ.Field(i)
			v.Field(i).Set(reflect.MakeFunc(f.Type, func([]reflect.Value) []reflect.Value {
				calls = append(calls, who+"."+f.Name)
				return nil
			}))
		}
		return h
	}
	c := reflect.ValueOf(compose([]*Hooks{mk("a"), {}, mk("b")})).Elem()
	for i := range typ.NumField() {
		f := typ.Field(i)
		calls = nil
		fn := c.Field(i)
		if fn.IsNil() {
			t.Errorf("%s not composed", f.Name)
			continue
		}
		fn.Call([]reflect.Value{reflect.Zero(f.Type.In(0))})
		if want := []string{"a." + f.Name, "b." + f.Name}; !reflect.DeepEqual(calls, want) {
			t.Errorf("%s called %v, want %v", f.Name, calls, want)
		}
	}
	empty := reflect.ValueOf(compose([]*Hooks{{}})).Elem()
	for i := range typ.NumField() {
		if !empty.Field(i).IsNil() {
			t.Errorf("%s set though no Hooks sets it", typ.Field(i).Name)
		}
	}
}
