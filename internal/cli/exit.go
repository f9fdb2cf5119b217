package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// FindingsError is what diff, check-upgrade and doctor return, after
// printing their report, when it holds an error-level finding. Like
// kubectl diff when it finds differences, the plugin then exits with
// code 1 and prints nothing more.
type FindingsError struct {
	// Summary is for callers in-process, e.g. "2 errors".
	Summary string
}

func (e *FindingsError) Error() string { return "error-level findings: " + e.Summary }

// CheckError wraps every other failure of those commands (bad flags,
// unreadable files, the API server's errors): the plugin exits with code 2
// (kubectl diff's ">1"), so that 1 always means "findings".
type CheckError struct{ Err error }

func (e *CheckError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *CheckError) Unwrap() error { return e.Err }

// checkCommand makes cmd follow kubectl diff's exit codes: its RunE's
// errors and flag errors become *CheckError, except *FindingsError.
func checkCommand(cmd *cobra.Command) *cobra.Command {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return asCheckError(run(c, args))
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asCheckError(err) })
	return cmd
}

func asCheckError(err error) error {
	var found *FindingsError
	if err == nil || errors.As(err, &found) {
		return err
	}
	return &CheckError{Err: err}
}
