package e2e

import (
	"strings"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// errorLine is err as the plugin's main prints it (cmdutil.CheckErr).
func errorLine(err error) string {
	if msg, ok := cmdutil.StandardErrorMessage(err); ok {
		return msg
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}
