package xdsgrpc

// CallDecision returns what the data plane decided for the RPC of info:
// the index of its route (-1 when none matched) and its request hash.
func CallDecision(info *CallInfo) (route int, hash uint64, hasHash bool) {
	return info.call.Route, info.call.Hash, info.call.HasHash
}
