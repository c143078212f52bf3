package xdsclient

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/cache"
)

// entrySnapshot copies every field of the cache's snapshot, whatever the
// generator did: each field set to a value of its own comes out in the
// EntrySnapshot field of the same name.
func TestEntrySnapshotCopiesEveryField(t *testing.T) {
	var in cache.Snapshot
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Type() {
		case reflect.TypeFor[string]():
			f.SetString(name)
		case reflect.TypeFor[[]byte]():
			f.SetBytes([]byte(name))
		case reflect.TypeFor[bool]():
			f.SetBool(true)
		case reflect.TypeFor[int]():
			f.SetInt(int64(100 + i))
		case reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Unix(int64(i), 0)))
		case reflect.TypeFor[error]():
			f.Set(reflect.ValueOf(errors.New(name)))
		case reflect.TypeFor[cache.State]():
			f.SetUint(uint64(cache.StateTimeout))
		default:
			t.Fatalf("cache.Snapshot.%s: a %v, which this test does not fill", name, f.Type())
		}
	}
	out := reflect.ValueOf(entrySnapshot(in))
	if out.NumField() != v.NumField() {
		t.Errorf("EntrySnapshot has %d fields, cache.Snapshot %d", out.NumField(), v.NumField())
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		got := out.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("EntrySnapshot has no field %s", name)
			continue
		}
		want := v.Field(i)
		if want.Kind() == reflect.Uint8 {
			if got.Uint() != want.Uint() {
				t.Errorf("%s = %d, want %d", name, got.Uint(), want.Uint())
			}
			continue
		}
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("%s = %v, want %v", name, got.Interface(), want.Interface())
		}
	}
}
