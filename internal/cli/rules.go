package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
)

// repoConfig is the rules file read from the repository's top directory
// when --config is not given.
const repoConfig = ".crdversion.yaml"

// RulesFlags are --rules and --config.
type RulesFlags struct {
	Rules, Config string
}

// AddFlags adds --rules and --config to flags.
func (fl *RulesFlags) AddFlags(flags *pflag.FlagSet) {
	flags.StringVar(&fl.Rules, "rules", schemadiff.RulesCrdversion, "Whose rules judge the release: crdversion (this tool's severities), olm (OLM v1's CRD upgrade safety preflight: crdify's rules with description None, enum additions allowed, conversion Ignore) or crdify (crdify's defaults: every rule Error).")
	flags.StringVar(&fl.Config, "config", "", "A crdify configuration file (validations: [{name, enforcement: Error|Warn|None, configuration}], unhandledEnforcement, conversion) applied over --rules olm or crdify (crdify when --rules is not given). Without it, "+repoConfig+" at the top of the git repository is read when present.")
}

// rulebook resolves --rules and --config: nil for crdversion's own rules.
// A configuration file, given or found at the repository's top directory,
// changes the olm or crdify rulebook (crdify when --rules is not set); an
// explicit --rules crdversion leaves a found file unread and refuses a
// given one.
func (fl *RulesFlags) rulebook(cmd *cobra.Command) (*schemadiff.Rulebook, error) {
	explicit := cmd.Flags().Changed("rules")
	config := fl.Config
	if config == "" && !(explicit && fl.Rules == schemadiff.RulesCrdversion) {
		config = findRepoConfig()
	}
	name := fl.Rules
	if config != "" && !explicit {
		name = schemadiff.RulesCrdify
	}
	if fl.Config != "" && name == schemadiff.RulesCrdversion {
		return nil, usageErrorf(cmd, "--config is a crdify configuration: it applies to --rules olm or crdify, not crdversion")
	}
	r, err := schemadiff.NewRulebook(name)
	if err != nil || r == nil {
		return r, err
	}
	if config != "" {
		data, err := os.ReadFile(config)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if err := r.Configure(data, config); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// findRepoConfig is .crdversion.yaml at the top of the git work tree the
// current directory is in ("" when there is none), found by walking up
// to the directory that holds .git.
func findRepoConfig() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			p := filepath.Join(dir, repoConfig)
			if _, err := os.Stat(p); err == nil {
				return p
			} else if !errors.Is(err, fs.ErrNotExist) {
				return p // unreadable: reading it says why
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
