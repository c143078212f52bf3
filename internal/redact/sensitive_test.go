package redact

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Every field treated as sensitive beyond the API's marks exists: a name
// that does not would silently redact nothing.
func TestAlsoSensitiveFieldsExist(t *testing.T) {
	for name := range alsoSensitive {
		msg, field := name.Parent(), name.Name()
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(msg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok || md.Fields().ByName(field) == nil {
			t.Errorf("%s: no such field", name)
		}
	}
}
