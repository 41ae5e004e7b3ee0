package scaleweb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Nginx is one nginx serving a generated web: a single server on the
// wildcard address of a port (loopback clients only), its root chosen by the
// address a request came in on (root/$server_addr), so one listen socket
// serves every host address of 127/8 and each host has an IP of its own.
// worker_connections is raised for thousands of keep-alive clients. Every
// request is logged to one access log, one line each:
// "$msec $server_addr $status $request_uri".
type Nginx struct {
	State string // the state directory: nginx.conf, logs, temp files
	Port  int
	cmd   *exec.Cmd
	done  chan error
}

// NginxBinary is the nginx executable: on PATH or Debian's /usr/sbin/nginx.
func NginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx is not installed (Debian: apt-get install nginx-light)")
}

// Config is the nginx.conf that serves root on port with its state in state.
func Config(root, state string, port int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	if os.Geteuid() == 0 {
		// nginx started by root runs its workers as nobody, who may not
		// read a private temporary directory.
		w("user root;")
	}
	w("worker_processes 1;")
	w("worker_rlimit_nofile 20000;")
	w("pid %s/nginx.pid;", state)
	w("error_log %s/error.log warn;", state)
	w("events { worker_connections 8192; }")
	w("http {")
	w("  types { text/html html; text/plain txt; }")
	w("  default_type application/octet-stream;")
	w("  sendfile on; tcp_nopush on; keepalive_requests 100000; keepalive_timeout 120s;")
	w("  client_body_temp_path %[1]s/tmp/body; proxy_temp_path %[1]s/tmp/proxy; fastcgi_temp_path %[1]s/tmp/fastcgi;", state)
	w("  uwsgi_temp_path %[1]s/tmp/uwsgi; scgi_temp_path %[1]s/tmp/scgi;", state)
	w("  log_format scale '$msec $server_addr $status $request_uri';")
	w("  access_log %s/access.log scale buffer=256k flush=1s;", state)
	w("  server {")
	w("    listen %d;", port)
	w("    allow 127.0.0.0/8; deny all;")
	w("    root %s/$server_addr;", root)
	w("  }")
	w("}")
	return b.String()
}

// StartNginx writes the configuration into state and starts nginx in the
// foreground as a child of this process.
func StartNginx(root, state string, port int) (*Nginx, error) {
	bin, err := NginxBinary()
	if err != nil {
		return nil, err
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	state, err = filepath.Abs(state)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(state, "tmp"), 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(state, "nginx.conf")
	if err := os.WriteFile(conf, []byte(Config(root, state, port)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-c", conf, "-p", state, "-g", "daemon off;"}
	if out, err := exec.Command(bin, append([]string{"-t", "-q"}, args...)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nginx -t: %v: %s", err, out)
	}
	n := &Nginx{State: state, Port: port, cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	n.cmd.Stderr = os.Stderr
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	go func() { n.done <- n.cmd.Wait() }()
	for range 100 {
		if b, err := os.ReadFile(filepath.Join(state, "nginx.pid")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return n, nil
		}
		select {
		case err := <-n.done:
			b, _ := os.ReadFile(filepath.Join(state, "error.log"))
			return nil, fmt.Errorf("nginx exited: %v: %s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
	}
	n.Stop()
	return nil, errors.New("nginx did not write its pid in 5 s")
}

// Rotate moves the access log to name and has nginx open a new one (its
// buffered lines are written out first), so name holds exactly the requests
// logged since the last rotation.
func (n *Nginx) Rotate(name string) error {
	name, err := filepath.Abs(name)
	if err != nil {
		return err
	}
	log := filepath.Join(n.State, "access.log")
	if err := os.Rename(log, name); err != nil {
		return fmt.Errorf("rotate access log: %w", err)
	}
	if reopenLogs == nil {
		return errors.New("rotate access log: nginx takes no signals on this system")
	}
	if err := n.cmd.Process.Signal(reopenLogs); err != nil {
		return fmt.Errorf("signal nginx: %w", err)
	}
	// The master reopens, then tells its workers: wait until no process of
	// nginx holds the old file.
	for range 200 {
		if _, err := os.Stat(log); err == nil && !treeHolds(n.cmd.Process.Pid, name) {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return errors.New("nginx did not reopen its access log in 5 s")
}

// treeHolds reports whether process pid or one of its children has file
// name open.
func treeHolds(pid int, name string) bool {
	for _, p := range append(children(pid), pid) {
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/fd")
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/fd/" + fd.Name()); err == nil && target == name {
				return true
			}
		}
	}
	return false
}

// children are the live child processes of pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if f := procStat(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// CPU is the user plus system time of nginx's master and workers so far.
func (n *Nginx) CPU() time.Duration {
	return TreeCPU(n.cmd.Process.Pid)
}

// Stop ends nginx (graceful, then killed after 5 s).
func (n *Nginx) Stop() {
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}

// TreeCPU is the user plus system time of process pid and its live children
// (from /proc; children that exited and were reaped are not counted).
func TreeCPU(pid int) time.Duration {
	total := procCPU(pid)
	for _, c := range children(pid) {
		total += procCPU(c)
	}
	return total
}

// procStat returns the fields of /proc/pid/stat after the command name
// (field 4, the parent pid, is index 1).
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// procCPU is utime + stime of pid (clock ticks of 10 ms, Linux's USER_HZ).
func procCPU(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}
