package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
)

// usageErrorf is kubectl's cmdutil.UsageErrorf on one line: the message,
// then where help is ("…; see 'kubectl crdversion status -h' for help and
// examples"), so that bad input is always reported as one error line.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return fmt.Errorf("%s; see '%s -h' for help and examples", fmt.Sprintf(format, args...), cmd.CommandPath())
}

// checkVersionNames returns an error for the first of names that is not a
// valid version name. Kubernetes requires every entry of a CRD's
// spec.versions to be a DNS-1035 label (apiextensions validation), so such
// a name can never name a version of any CRD: it is refused before the
// cluster is asked. what says where the names come from, e.g. "--from", or
// "" for positional arguments.
func checkVersionNames(what string, names ...string) error {
	for _, name := range names {
		if len(validation.IsDNS1035Label(name)) == 0 {
			continue
		}
		if what != "" {
			what += " "
		}
		return fmt.Errorf("%s%q is not a valid version name: a DNS-1035 label is lower-case letters, digits and '-', starts with a letter, ends with one or a digit (v1, v2beta1)", what, name)
	}
	return nil
}

// positiveDuration refuses a duration flag that is zero or negative.
func positiveDuration(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s must be positive, got %s", flag, d)
	}
	return nil
}

// unknownCommand is the root command's Args: cobra reports an unknown
// command with its suggestions over several lines; this says the same on
// one ("unknown command "statuss" for "kubectl crdversion"; did you mean
// status?").
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return fmt.Errorf("%s; see '%s --help' for the commands", msg, cmd.CommandPath())
}

// addVersionOrderFlag adds --version-order, the order of a CRD's versions,
// oldest first, for names that Kubernetes' version rules do not order.
func addVersionOrderFlag(fs *pflag.FlagSet, order *[]string) {
	fs.StringSliceVar(order, "version-order", nil, "The CRD's versions from oldest to newest (comma-separated), for version names that Kubernetes' rules (vN, vNbetaM, vNalphaM) do not order, such as v1api20210501 or alpha/stable; without it such names are ordered only by status.storedVersions, never alphabetically.")
}
