package schema

// Under reports whether path — an object's JSON path from the root
// (".spec.ports[2].x") or a schema's (".spec.ports[*].x", ".spec.*", as
// PrunedFields gives them) — is one of accepted or lies under one of them
// (".spec.ports" holds ".spec.ports[2].x"). An index "[*]" in an accepted
// path stands for every index; any other part is compared as written, so
// accepting ".spec.ports[0]" does not accept the schema path
// ".spec.ports[*]", nor ".spec.a" the schema path ".spec.*".
func Under(accepted []string, path string) bool {
	for _, a := range accepted {
		if under(a, path) {
			return true
		}
	}
	return false
}

func under(a, path string) bool {
	i, j := 0, 0
	for i < len(a) {
		if a[i:min(i+3, len(a))] == "[*]" && j < len(path) && path[j] == '[' {
			k := j
			for k < len(path) && path[k] != ']' {
				k++
			}
			if k == len(path) {
				return false
			}
			i, j = i+3, k+1
			continue
		}
		if j == len(path) || a[i] != path[j] {
			return false
		}
		i, j = i+1, j+1
	}
	return j == len(path) || path[j] == '.' || path[j] == '['
}
