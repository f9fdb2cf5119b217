package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/crdversion/kubectl-crdversion/internal/action"
)

// CrossCheckEnv names the environment variable that makes migrate,
// retire --migrate and promote-storage measure each loss pass that reads (two paged lists)
// also by dry runs, and fail where the two verdicts differ. Its value is a
// file: a disagreement is appended to it as one line, so that a test suite
// that sets it for every run can fail at its end on any (the e2e tests do).
// Empty: no cross-check.
const CrossCheckEnv = "CRDVERSION_LOSS_CROSSCHECK"

// crossCheckFile is the file of CrossCheckEnv ("" when unset).
func crossCheckFile() string { return os.Getenv(CrossCheckEnv) }

// recordDisagreement appends the disagreement in err, if any, to file; err
// is returned as it is.
func recordDisagreement(file string, err error) error {
	var d *action.LossDisagreement
	if file == "" || !errors.As(err, &d) {
		return err
	}
	f, ferr := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if ferr != nil {
		return errors.Join(err, ferr)
	}
	defer f.Close()
	if _, werr := fmt.Fprintln(f, d.Detail()); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}
