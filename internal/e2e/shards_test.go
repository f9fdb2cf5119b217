package e2e

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The e2e tests can run as shards: processes of the same test binary, each
// with an API server of its own, started side by side (.ci/e2e-shards).
// Tests that act on the whole API server (a restart, etcd compaction,
// webhooks on every CRD write, controllers, RBAC and APF measurements,
// sweeps over every CRD) run serially, one after another, before the
// parallel tests of their process; in one process they were the suite's
// critical path. Each solo shard takes a group of them to a server of its
// own, and the parallel shard runs everything else.
//
// CRDVERSION_E2E_SHARD selects a shard by name; "list" prints the names,
// one a line. Without it every test runs in one process, as before.

// shardEnv names the shard a test process runs.
const shardEnv = "CRDVERSION_E2E_SHARD"

// parallelShard runs every test no solo shard names.
const parallelShard = "parallel"

// soloShards are the tests each solo shard runs, by exact top-level name.
// A name not listed runs in the parallel shard; TestShardsNameRealTests
// checks that every name is a test of this package and appears once.
var soloShards = []struct {
	name  string
	tests []string
}{
	// An API server restart, etcd compactions (which end the history
	// of every CRD, B10), concurrent CRD edits: every other client of
	// the server would see them.
	{"solo-restart", []string{
		"TestFaultMigrateSurvivesAPIServerRestart",
		"TestFaultMigrateEtcdCompactionDuringPaging",
		"TestFaultMigrateRecoversFromExpiredContinue",
		"TestExpiredCheckpointCountsEachObjectOnce",
		"TestMigrateUnknownWhenTheCRDHistoryIsCompacted",
		"TestFaultMigrateResumesFromCheckpoint",
		"TestFaultMigrateCRDChangedMidRun",
		"TestFaultConcurrentCRDEdit",
		"TestFaultPromoteStorageRace",
		// Conversion webhooks that are slow or down (here for balance:
		// the migrator controller's shard is the longer one).
		"TestFaultMigrateSlowConversionWebhook",
		"TestFaultMigrateConversionWebhookDown",
	}},
	// Permissions and API Priority and Fairness: RBAC objects, identities
	// and flow-control measurements of the whole server.
	{"solo-rbac", []string{
		"TestRBACRolesOfTheDocs",
		"TestFaultPermissionPreflight",
		"TestIdentitiesLandWhereExpected",
		"TestMigrateRetries429sFromAPF",
		"TestMigrateReportsWhereItLands",
	}},
	// The storage version migrator controller.
	{"solo-svm", []string{
		"TestMigrateServerEngine",
		"TestMigrateServerEngineFailed",
		"TestMigrateServerEngineRefusalsAndTimeout",
		"TestFaultDryRunOnAStaleRead",
	}},
	// Owner references, scale targets and Helm release records (issue 28): the inventory reads
	// every resource of the server, which the parallel shard's tests leave
	// unreadable on purpose, a garbage collector with workers deletes on the
	// whole server, and an HPA controller scales every HPA of it.
	{"solo-references", []string{
		"TestGarbageCollectorAndAnUnservedOwnerVersion",
		"TestUnserveRefusesOwnerReferences",
		"TestRetireRepairsOwnerReferences",
		"TestCase31OwnerReferencesPinRemovedVersion",
		"TestScaleTargetOfAnUnservedVersion",
		"TestAdmissionRulesBlockUnserveAndRetire",
		"TestHelmReleaseRecordOfARemovedVersion",
		"TestRetireRepairsHelmReleaseRecords",
		"TestReferencesSettleWhenDiscoveryLags",
	}},
	// Sweeps that see every CRD of the server, and real CRDs installed
	// under their own names.
	{"solo-sweeps", []string{
		"TestDoctor",
		"TestCorpusInstallAndStatus",
		"TestPruningPredictionMatchesAPIServer",
		"TestStatusGatewayAPI",
		"TestManifestMode",
		"TestNoneConversionOnRealCRDs",
		"TestFaultMigrateWithConcurrentWritersAndDeletes",
		"TestFaultMigrateFailuresBlockTheTrim",
		"TestFaultMigrateNamesEveryUnreadableObject",
	}},
}

// shardNames are the names CRDVERSION_E2E_SHARD accepts.
func shardNames() []string {
	names := []string{parallelShard}
	for _, s := range soloShards {
		names = append(names, s.name)
	}
	return names
}

// anchored is a -test.run pattern matching exactly the top-level tests
// names (subtests included).
func anchored(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// selectShard narrows the tests this process runs to shard, honouring a
// -test.run or -test.skip the user gave. It reports false when no test of
// the shard is left to run (the process then starts no API server). It is
// called after flag.Parse.
func selectShard(shard string) (bool, error) {
	runFlag, skipFlag := flag.Lookup("test.run"), flag.Lookup("test.skip")
	if runFlag == nil || skipFlag == nil {
		return false, fmt.Errorf("the testing flags are not registered")
	}
	if shard == parallelShard {
		var solo []string
		for _, s := range soloShards {
			solo = append(solo, s.tests...)
		}
		skip := anchored(solo)
		if user := skipFlag.Value.String(); user != "" {
			skip = user + "|" + skip
		}
		return true, skipFlag.Value.Set(skip)
	}
	for _, s := range soloShards {
		if s.name != shard {
			continue
		}
		tests, sub := s.tests, ""
		if user := runFlag.Value.String(); user != "" {
			// A solo shard's tests are named, so the user's pattern
			// (its top-level part) can be applied here; its subtest
			// part stays.
			top, rest, _ := strings.Cut(user, "/")
			sub = rest
			re, err := regexp.Compile(top)
			if err != nil {
				return false, fmt.Errorf("-test.run: %w", err)
			}
			tests = nil
			for _, name := range s.tests {
				if re.MatchString(name) {
					tests = append(tests, name)
				}
			}
		}
		if len(tests) == 0 {
			return false, nil
		}
		pattern := anchored(tests)
		if sub != "" {
			pattern += "/" + sub
		}
		return true, runFlag.Value.Set(pattern)
	}
	names := shardNames()
	sort.Strings(names)
	return false, fmt.Errorf("%s=%q: no such shard (one of: %s)", shardEnv, shard, strings.Join(names, ", "))
}

// applyShard is TestMain's part of sharding: it prints the shard names
// for "list" and narrows the tests otherwise. It returns whether the
// process should go on to start the API server and run tests, or the
// error of a shard that does not exist.
func applyShard() (bool, error) {
	shard, ok := os.LookupEnv(shardEnv)
	if !ok || shard == "" {
		return true, nil
	}
	if shard == "list" {
		for _, n := range shardNames() {
			fmt.Println(n)
		}
		return false, nil
	}
	run, err := selectShard(shard)
	if err != nil {
		return false, err
	}
	if !run {
		fmt.Printf("e2e: shard %s: no test matches -test.run; no API server started\n", shard)
	}
	return run, nil
}

// TestShardsNameRealTests checks the solo shards' lists: a name that is
// not a top-level test of this package (a typo, a renamed test) would
// leave the test in the parallel shard, and a name in two shards would run
// twice.
func TestShardsNameRealTests(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				tests[fn.Name.Name] = true
			}
		}
	}
	if len(tests) < 50 {
		t.Fatalf("found only %d tests in %v: the parse is wrong", len(tests), files)
	}
	seen := map[string]string{}
	for _, s := range soloShards {
		for _, name := range s.tests {
			if !tests[name] {
				t.Errorf("shard %s names %s, which is not a test of this package", s.name, name)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%s is in shards %s and %s", name, other, s.name)
			}
			seen[name] = s.name
		}
	}
}
