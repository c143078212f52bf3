package decoding

import (
	"fmt"
	"maps"
	"math"
	"slices"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The message types of the two TypedStruct wrappers, as ExtensionType
// returns them.
const (
	XDSTypedStruct  = "xds.type.v3.TypedStruct"
	UDPATypedStruct = "udpa.type.v1.TypedStruct"
)

// ReadTypedStruct reads from b a TypedStruct of the kind typ names
// (XDSTypedStruct or UDPATypedStruct): the type URL it holds, and its
// value.
func ReadTypedStruct(typ string, b []byte) (typeURL string, value *structpb.Struct, err error) {
	if typ == XDSTypedStruct {
		ts := new(xdstypev3.TypedStruct)
		err = Unmarshal(b, ts)
		return ts.GetTypeUrl(), ts.GetValue(), err
	}
	ts := new(udpatypev1.TypedStruct)
	err = Unmarshal(b, ts)
	return ts.GetTypeUrl(), ts.GetValue(), err
}

// CheckJSON reports an error when s cannot be written as JSON, as gRPC
// C-core writes a Struct it reads (ParseProtobufStructToJson): a number
// that is NaN or infinite has no JSON form. The error names the path of
// that value below s.
func CheckJSON(s *structpb.Struct) error {
	for _, k := range slices.Sorted(maps.Keys(s.GetFields())) {
		if err := checkJSONValue(s.GetFields()[k]); err != nil {
			return fmt.Errorf("[%q]%v", k, err)
		}
	}
	return nil
}

func checkJSONValue(v *structpb.Value) error {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return fmt.Errorf(": number %v has no JSON form", k.NumberValue)
		}
	case *structpb.Value_StructValue:
		return CheckJSON(k.StructValue)
	case *structpb.Value_ListValue:
		for i, e := range k.ListValue.GetValues() {
			if err := checkJSONValue(e); err != nil {
				return fmt.Errorf("[%d]%v", i, err)
			}
		}
	}
	return nil
}
