package lifecycle

import "testing"

func TestCommandRender(t *testing.T) {
	ctx := []Flag{{Name: "context", Value: "west"}, {Name: "kubeconfig", Value: "/home/me/.kube/two clusters"}}
	for _, tc := range []struct {
		name   string
		cmds   []Command
		global []Flag
		want   string
	}{
		{"plugin, no connection flags", []Command{Crdversion("migrate", "crontabs.stable.example.com")}, nil,
			"kubectl crdversion migrate crontabs.stable.example.com"},
		// kubectl refuses flags before a plugin's name ("flags cannot be
		// placed before plugin name"): they go after it.
		{"plugin with --context", []Command{Crdversion("migrate", "c")}, ctx[:1],
			"kubectl crdversion --context west migrate c"},
		{"a value with a space is quoted", []Command{Crdversion("migrate", "c")}, ctx,
			"kubectl crdversion --context west --kubeconfig '/home/me/.kube/two clusters' migrate c"},
		{"kubectl's own command", []Command{Kubectl("patch", "crd", "c").With("type", "merge").With("p", `{"spec":{"preserveUnknownFields":false}}`)}, ctx[:1],
			`kubectl --context west patch crd c --type merge -p '{"spec":{"preserveUnknownFields":false}}'`},
		{"boolean flags", []Command{Crdversion("add-version", "c", "v1").With("from", "v2").With("served", "false").With("dry-run", "")}, nil,
			"kubectl crdversion add-version c v1 --from v2 --served=false --dry-run"},
		// "--own-priority-level 3" is the flag at its default and an
		// argument "3".
		{"a flag whose value is optional", []Command{Crdversion("retire", "c", "v1").With("migrate", "")}, []Flag{{Name: "own-priority-level", Value: "3", Joined: true}},
			"kubectl crdversion --own-priority-level=3 retire c v1 --migrate"},
		{"a placeholder stays readable", []Command{Crdversion("add-version", "c", "<new-version>")}, nil,
			"kubectl crdversion add-version c <new-version>"},
		{"a quote inside a value", []Command{Crdversion("deprecate", "c", "v1").With("warning", "don't")}, nil,
			`kubectl crdversion deprecate c v1 --warning 'don'\''t'`},
		{"several commands stop at the first failure", []Command{Crdversion("serve", "c", "v2"), Crdversion("migrate", "c")}, ctx[:1],
			"kubectl crdversion --context west serve c v2 && kubectl crdversion --context west migrate c"},
		// helm names the connection flags its own way; one it has no
		// name for stays kubectl's, and helm refuses the line.
		{"helm's command", []Command{Helm("upgrade", "backup", "./chart").With("n", "backup-system")}, append(ctx, Flag{Name: "as", Value: "ops"}),
			"helm upgrade backup ./chart -n backup-system --kube-context west --kubeconfig '/home/me/.kube/two clusters' --kube-as-user ops"},
		{"helm refuses what it cannot name", []Command{Helm("upgrade", "r", "c")}, []Flag{{Name: "cluster", Value: "east"}},
			"helm upgrade r c --cluster east"},
		{"none", nil, ctx, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RenderAll(tc.cmds, tc.global); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFindingWithRunRenderedAgain(t *testing.T) {
	f := Finding{Code: "X", Message: "m"}.WithRun(Crdversion("migrate", "c"))
	if f.Fix != "kubectl crdversion migrate c" {
		t.Fatalf("fix %q", f.Fix)
	}
	fs := Rendered([]Finding{f, {Code: "Y", Fix: "repair the webhook"}}, []Flag{{Name: "context", Value: "east"}})
	if fs[0].Fix != "kubectl crdversion --context east migrate c" || fs[1].Fix != "repair the webhook" {
		t.Errorf("rendered %+v", fs)
	}
	if f.Fix != "kubectl crdversion migrate c" {
		t.Errorf("the input changed: %q", f.Fix)
	}
}
