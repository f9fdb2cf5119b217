package apiserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// A server started by StartProcess runs in a process of its own: the test
// binary again, told by serverProcessEnv to run RunServerProcess instead of
// its tests. kube-apiserver ends its process with klog.Fatal when a
// post-start hook fails (rbac/bootstrap-roles gives up after 30 s on a
// loaded machine): in a process of its own that ends one server, which
// the test that started it reports, not every test of the binary.
//
// The parent talks to the child over its standard input and output, one
// line each way: the child prints a reply (processReplyPrefix, then JSON)
// when its server is ready and after each command it reads ("restart",
// "fatal"); at the end of its input it stops its server and exits.
const serverProcessEnv = "CRDVERSION_APISERVER_PROCESS"

// processReplyPrefix starts every reply line of a server process; other
// lines on its standard output are not the harness's.
const processReplyPrefix = "crdversion-apiserver-process: "

// processSpec is the part of Options a server process is given.
type processSpec struct {
	ExtraFlags  []string `json:"extraFlags,omitempty"`
	Restartable bool     `json:"restartable,omitempty"`
}

// processReply is what a server process answers: how to reach its server,
// or why a command failed.
type processReply struct {
	Host          string   `json:"host,omitempty"`
	ServerName    string   `json:"serverName,omitempty"`
	BearerToken   string   `json:"bearerToken,omitempty"`
	CAData        []byte   `json:"caData,omitempty"`
	CertData      []byte   `json:"certData,omitempty"`
	KeyData       []byte   `json:"keyData,omitempty"`
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	EtcdPrefix    string   `json:"etcdPrefix,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// process is the child of a Server started by StartProcess.
type process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan processReply
	exited  chan struct{}
	logPath string

	mu      sync.Mutex // serializes commands
	exitErr error      // set before exited is closed
}

// IsServerProcess reports whether this process was started by StartProcess
// to run one API server: TestMain must then call RunServerProcess, before
// anything else, and end the process (non-zero) when it returns an error.
func IsServerProcess() bool { return os.Getenv(serverProcessEnv) != "" }

// RunServerProcess runs the API server of a process started by
// StartProcess (Start, in this process, with the spec's options, logging
// to standard error) and answers its parent's commands until its standard
// input ends; it then stops the server. It returns why the server could
// not start.
func RunServerProcess() error {
	var spec processSpec
	if err := json.Unmarshal([]byte(os.Getenv(serverProcessEnv)), &spec); err != nil {
		return fmt.Errorf("%s: %w", serverProcessEnv, err)
	}
	reply := func(r processReply) {
		data, _ := json.Marshal(r)
		fmt.Fprintf(os.Stdout, "%s%s\n", processReplyPrefix, data)
	}
	s, err := Start(Options{Log: os.Stderr, ExtraFlags: spec.ExtraFlags, Restartable: spec.Restartable})
	if err != nil {
		reply(processReply{Error: err.Error()})
		return err
	}
	defer s.Stop()
	reply(processReply{
		Host:          s.Config.Host,
		ServerName:    s.Config.ServerName,
		BearerToken:   s.Config.BearerToken,
		CAData:        s.Config.CAData,
		CertData:      s.Config.CertData,
		KeyData:       s.Config.KeyData,
		EtcdEndpoints: s.Etcd.Endpoints(),
		EtcdPrefix:    s.EtcdPrefix,
	})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch cmd := in.Text(); cmd {
		case "restart":
			var r processReply
			if err := s.Restart(); err != nil {
				r.Error = err.Error()
			}
			reply(r)
		case "fatal":
			// What a failed post-start hook does (the harness's own
			// test of StartProcess).
			klog.Fatalf("fatal requested by the parent process")
		default:
			reply(processReply{Error: fmt.Sprintf("unknown command %q", cmd)})
		}
	}
	return nil
}

// StartProcess is Start with the API server (and its etcd) in a process
// of its own, the test binary run again: its TestMain must call
// RunServerProcess when IsServerProcess. A fatal error of that
// kube-apiserver ends its process only: StartProcess, Restart and Exited
// then say why, with the fatal line of its log. Options.Log receives the
// process's log; Options.Dir is where the kubeconfig is written. Server.Etcd
// is a client of the process's etcd. Stop ends the process.
func StartProcess(opts Options) (s *Server, err error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	tb := newProcessTB("crdversion-apiserver-process", log)
	defer func() {
		recoverFatal(recover(), &err)
		if err != nil {
			tb.runCleanups()
			s = nil
		}
	}()
	dir := opts.Dir
	if dir == "" {
		dir = tb.TempDir()
	}
	spec, err := json.Marshal(processSpec{ExtraFlags: opts.ExtraFlags, Restartable: opts.Restartable})
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logDir := tb.TempDir()
	p := &process{replies: make(chan processReply, 16), exited: make(chan struct{}), logPath: filepath.Join(logDir, "apiserver-process.log")}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(self)
	p.cmd.Env = append(os.Environ(), serverProcessEnv+"="+string(spec))
	p.cmd.Stderr = io.MultiWriter(logFile, log)
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		logFile.Close()
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the API server process: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), processReplyPrefix)
			if !ok {
				fmt.Fprintln(logFile, sc.Text())
				continue
			}
			var r processReply
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				r.Error = fmt.Sprintf("unreadable reply %q: %v", line, err)
			}
			p.replies <- r
		}
		// The pipe ends when the process exits: Wait may close it only
		// after every line is read.
		err := p.cmd.Wait()
		logFile.Close()
		p.exitErr = p.describeExit(err)
		close(p.exited)
	}()
	tb.Cleanup(p.stop)
	r, err := p.await(3 * time.Minute)
	if err != nil {
		return nil, fmt.Errorf("starting the API server process: %w", err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: r.EtcdEndpoints, DialTimeout: 20 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("a client of the API server process's etcd: %w", err)
	}
	tb.Cleanup(func() { _ = etcd.Close() }) // before the process stops
	s = &Server{
		Config: &rest.Config{
			Host:        r.Host,
			BearerToken: r.BearerToken,
			TLSClientConfig: rest.TLSClientConfig{
				ServerName: r.ServerName, CAData: r.CAData, CertData: r.CertData, KeyData: r.KeyData,
			},
			QPS:   1000,
			Burst: 10000,
		},
		Etcd:       etcd,
		EtcdPrefix: r.EtcdPrefix,
		tb:         tb,
		proc:       p,
	}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(s.Kubeconfig, s.Config); err != nil {
		return nil, err
	}
	return s, nil
}

// await waits for the next reply of the process, for up to timeout.
func (p *process) await(timeout time.Duration) (processReply, error) {
	select {
	case r := <-p.replies:
		if r.Error != "" {
			return r, errors.New(r.Error)
		}
		return r, nil
	case <-p.exited:
		// A reply written just before the exit is still an answer.
		select {
		case r := <-p.replies:
			if r.Error != "" {
				return r, errors.New(r.Error)
			}
			return r, nil
		default:
		}
		return processReply{}, p.exitErr
	case <-time.After(timeout):
		return processReply{}, fmt.Errorf("no answer from the API server process after %s; the end of its log:\n%s", timeout, tail(p.logPath, 15))
	}
}

// command sends cmd to the process and waits for its reply.
func (p *process) command(cmd string, timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return p.exitErr
	default:
	}
	if _, err := fmt.Fprintln(p.stdin, cmd); err != nil {
		<-p.exited
		return p.exitErr
	}
	_, err := p.await(timeout)
	return err
}

// stop ends the process: the end of its input makes it stop its server
// (kube-apiserver, then etcd); it is killed after 30 s.
func (p *process) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// klogFatal matches the header of a klog line at level FATAL
// (F1204 03:41:07.123456 ...).
var klogFatal = regexp.MustCompile(`^F\d{4} \d\d:\d\d:\d\d\.\d+ `)

// describeExit says why the process ended: the exit status with the fatal
// line of its log (klog prints every goroutine's stack after it, so the
// log's end is no use), else a panic's line, else the log's last lines.
func (p *process) describeExit(waitErr error) error {
	status := "exited"
	if waitErr != nil {
		status = waitErr.Error()
	}
	data, _ := os.ReadFile(p.logPath)
	lines := strings.Split(string(data), "\n")
	for _, prefix := range []*regexp.Regexp{klogFatal, regexp.MustCompile(`^panic: `)} {
		for _, line := range lines {
			if prefix.MatchString(line) {
				if len(line) > 1000 {
					line = line[:1000] + " …"
				}
				return fmt.Errorf("the API server process ended (%s): %s", status, line)
			}
		}
	}
	return fmt.Errorf("the API server process ended (%s); the end of its log:\n%s", status, tail(p.logPath, 15))
}

// Exited is closed when the process of a server started by StartProcess
// has ended, for whatever reason, Stop included; ExitErr then says why.
// It is nil (never closed) for a server of this process.
func (s *Server) Exited() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.proc.exited
}

// ExitErr says why the process of a server started by StartProcess ended
// (its fatal log line), nil while it runs.
func (s *Server) ExitErr() error {
	if s.proc == nil {
		return nil
	}
	select {
	case <-s.proc.exited:
		return s.proc.exitErr
	default:
		return nil
	}
}
