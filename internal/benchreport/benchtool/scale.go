package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/internal/benchreport"
	"github.com/horseshoe-crawler/horseshoe/internal/scaleweb"
)

// scaleOptions are the flags of `benchtool scale`.
type scaleOptions struct {
	hosts, pages, runs, workers int
	delays                      []time.Duration
	modes                       []string
	crawler, dir, doc, profile  string
	timeout                     time.Duration
	commandStats, scriptStats   bool
}

func parseScale(args []string) (scaleOptions, error) {
	var o scaleOptions
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.IntVar(&o.hosts, "hosts", 1000, "hosts of the generated web")
	fs.IntVar(&o.pages, "pages", 20, "pages a host")
	fs.IntVar(&o.runs, "runs", 3, "runs of each mode at each delay (medians are reported)")
	fs.IntVar(&o.workers, "workers", 16, "concurrent fetches of each crawler process (--workers)")
	delays := fs.String("delays", "0,5s", "politeness delays, comma-separated: 0 is CPU-bound")
	modes := fs.String("modes", "embedded,redis-1,redis-2", "embedded (one process, Badger) and redis-N (N workers over one Redis)")
	fs.StringVar(&o.crawler, "crawler", "bin/crawler", "the crawler binary")
	fs.StringVar(&o.dir, "dir", "", "run directory (web, logs, results); default a new temporary one, removed after")
	fs.StringVar(&o.doc, "doc", "", "BENCHMARKS.md to rewrite between the bench:scale markers (empty: print only)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "longest crawl")
	fs.BoolVar(&o.commandStats, "commandstats", false, "print Redis's INFO commandstats of each Redis run per page (calls, usec; reset before the run) and keep it in the run directory's logs")
	fs.BoolVar(&o.scriptStats, "scriptstats", false, "print what Redis spent on each script and command of each Redis run per page, from its SLOWLOG (every command logged: the logging costs Redis CPU, so the run's CPU figures are not comparable)")
	fs.StringVar(&o.profile, "profile", "", "directory for a CPU profile of each crawler process (--cpuprofile), named DELAY-MODE-RUN.workerN.pprof")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*delays, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return o, fmt.Errorf("-delays: %w", err)
		}
		o.delays = append(o.delays, d)
	}
	for _, m := range strings.Split(*modes, ",") {
		if _, err := workersOf(m); err != nil {
			return o, err
		}
		o.modes = append(o.modes, m)
	}
	if o.hosts < 1 || o.pages < 1 || o.runs < 1 || o.workers < 1 {
		return o, errors.New("scale: -hosts, -pages, -runs and -workers must be at least 1")
	}
	return o, nil
}

// workersOf is the number of Redis workers of a mode (0: embedded).
func workersOf(mode string) (int, error) {
	if mode == "embedded" {
		return 0, nil
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(mode, "redis-")); err == nil && strings.HasPrefix(mode, "redis-") && n >= 1 {
		return n, nil
	}
	return 0, fmt.Errorf("scale: unknown mode %q (embedded or redis-N)", mode)
}

// scaleEnv is what the runs share: the web, its nginx, a redis-server.
type scaleEnv struct {
	o      scaleOptions
	web    scaleweb.Web
	seeds  string // file of seed URLs
	nginx  *scaleweb.Nginx
	redis  *exec.Cmd
	rdb    *redis.Client
	rurl   string
	logDir string
}

// runScale is `benchtool scale`: it generates the web, serves it, crawls it
// in every mode at every delay (runs rotating the modes' order), writes
// DIR/scale.json, prints the table and rewrites the doc's section.
func runScale(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseScale(args)
	if err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "horseshoe-scale-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	started := time.Now()
	env, err := startScaleEnv(ctx, o)
	if err != nil {
		return err
	}
	defer env.close()
	var runs []benchreport.ScaleRun
	for _, d := range o.delays {
		for k := 1; k <= o.runs; k++ {
			for i := range o.modes {
				mode := o.modes[(i+k-1)%len(o.modes)]
				r, err := env.crawl(ctx, mode, d, k)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "   delay %s %s run %d: %d pages, %.0f pages/s, span %s, load %.1f\n",
					d, mode, k, r.Pages, r.Rate, r.Span.Round(time.Millisecond), r.LoadAvg)
				runs = append(runs, r)
			}
		}
	}
	b, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.dir, "scale.json"), b, 0o644); err != nil {
		return err
	}
	text := renderScale(o, runs, time.Since(started))
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if o.doc == "" {
		return nil
	}
	old, err := os.ReadFile(o.doc)
	if err != nil {
		return fmt.Errorf("read %s: %w", o.doc, err)
	}
	updated, err := benchreport.ReplaceSection(string(old), "<!-- bench:scale:begin -->", "<!-- bench:scale:end -->", text)
	if err != nil {
		return fmt.Errorf("%s: %w", o.doc, err)
	}
	return os.WriteFile(o.doc, []byte(updated), 0o644)
}

func startScaleEnv(ctx context.Context, o scaleOptions) (env *scaleEnv, err error) {
	env = &scaleEnv{o: o, logDir: filepath.Join(o.dir, "logs")}
	defer func() {
		if err != nil {
			env.close()
		}
	}()
	if err := os.MkdirAll(env.logDir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort(":0")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "== scale: generating %d hosts x %d pages\n", o.hosts, o.pages)
	env.web, err = scaleweb.Generate(filepath.Join(o.dir, "web"), scaleweb.Options{Hosts: o.hosts, PagesPerHost: o.pages, Port: port})
	if err != nil {
		return nil, err
	}
	env.seeds = filepath.Join(o.dir, "seeds")
	if err := os.WriteFile(env.seeds, []byte(strings.Join(env.web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if env.nginx, err = scaleweb.StartNginx(env.web.Root, filepath.Join(o.dir, "nginx"), port); err != nil {
		return nil, err
	}
	if err := env.startRedis(ctx); err != nil {
		return nil, err
	}
	return env, nil
}

// startRedis starts a redis-server on a free loopback port, without
// persistence (the bench measures the crawl, not Redis's disk).
func (env *scaleEnv) startRedis(ctx context.Context) error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server is not installed (Debian: apt-get install redis-server): %w", err)
	}
	port, err := freePort("127.0.0.1:0")
	if err != nil {
		return err
	}
	dir := filepath.Join(env.o.dir, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	env.redis = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
	if err := env.redis.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env.rurl = "redis://" + addr + "/0"
	env.rdb = redis.NewClient(&redis.Options{Addr: addr})
	for range 100 {
		if env.rdb.Ping(ctx).Err() == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("redis-server did not answer in 5 s")
}

// slowlogAll makes Redis log every command in its SLOWLOG (on), or only
// those over 10 ms again (off); the log is emptied either way.
func (env *scaleEnv) slowlogAll(ctx context.Context, on bool) error {
	under, n := "10000", "128"
	if on {
		under, n = "0", "4000000"
	}
	_, err := env.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ConfigSet(ctx, "slowlog-log-slower-than", under)
		p.ConfigSet(ctx, "slowlog-max-len", n)
		p.SlowLogReset(ctx)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis slowlog: %w", err)
	}
	return nil
}

func (env *scaleEnv) close() {
	if env.rdb != nil {
		env.rdb.Close()
	}
	if env.redis != nil && env.redis.Process != nil {
		_ = env.redis.Process.Signal(syscall.SIGTERM)
		_ = env.redis.Wait()
	}
	if env.nginx != nil {
		env.nginx.Stop()
	}
}

// crawl runs one crawl of the web in mode at delay and measures it: each
// crawler process pinned to its own core (taskset), redis-server and nginx
// not pinned.
func (env *scaleEnv) crawl(ctx context.Context, mode string, delay time.Duration, k int) (benchreport.ScaleRun, error) {
	o := env.o
	n, _ := workersOf(mode)
	r := benchreport.ScaleRun{Mode: mode, Delay: delay, Hosts: o.hosts, Run: k, LoadAvg: loadAvg(), Workers: max(n, 1)}
	name := fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(delay.String(), ".", "_"), mode, k)
	if err := env.rdb.FlushAll(ctx).Err(); err != nil {
		return r, fmt.Errorf("flush redis: %w", err)
	}
	if err := env.nginx.Rotate(filepath.Join(env.logDir, name+".before.log")); err != nil {
		return r, err
	}
	data := filepath.Join(o.dir, "data-"+name)
	defer os.RemoveAll(data)
	var cmds []*exec.Cmd
	for i := range max(n, 1) {
		args := []string{"-c", strconv.Itoa(i % runtime.NumCPU()), o.crawler, "crawl",
			"--data", filepath.Join(data, strconv.Itoa(i)), "--delay", delay.String(),
			"--workers", strconv.Itoa(o.workers), "--quiet", "--seeds", env.seeds}
		if n > 0 {
			args = append(args, "--redis", env.rurl, "--crawl", name)
		}
		if o.profile != "" {
			args = append(args, "--cpuprofile", filepath.Join(o.profile, fmt.Sprintf("%s.worker%d.pprof", name, i)))
		}
		cmd := exec.CommandContext(ctx, "taskset", args...)
		out, err := os.Create(filepath.Join(env.logDir, fmt.Sprintf("%s.worker%d.log", name, i)))
		if err != nil {
			return r, err
		}
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
		cmds = append(cmds, cmd)
	}
	if o.commandStats && n > 0 {
		if err := env.rdb.ConfigResetStat(ctx).Err(); err != nil {
			return r, fmt.Errorf("reset redis stats: %w", err)
		}
	}
	if o.scriptStats && n > 0 {
		if err := env.slowlogAll(ctx, true); err != nil {
			return r, err
		}
	}
	redisCPU, nginxCPU := scaleweb.TreeCPU(env.redis.Process.Pid), env.nginx.CPU()
	if err := runAll(cmds, o.timeout); err != nil {
		return r, fmt.Errorf("%s: %w (logs in %s)", name, err, env.logDir)
	}
	r.RedisCPU = scaleweb.TreeCPU(env.redis.Process.Pid) - redisCPU
	r.NginxCPU = env.nginx.CPU() - nginxCPU
	for _, c := range cmds {
		r.WorkerCPU += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	logName := filepath.Join(env.logDir, name+".access.log")
	if err := env.nginx.Rotate(logName); err != nil {
		return r, err
	}
	b, err := os.ReadFile(logName)
	if err != nil {
		return r, err
	}
	hits, err := benchreport.ParseAccessLog(bytes.NewReader(b))
	if err != nil {
		return r, err
	}
	benchreport.AnalyzeHits(&r, hits)
	if o.scriptStats && n > 0 {
		big := redis.NewClient(&redis.Options{Addr: env.rdb.Options().Addr, ReadTimeout: 5 * time.Minute}) // millions of entries
		entries, err := big.SlowLogGet(ctx, -1).Result()
		big.Close()
		if err != nil {
			return r, fmt.Errorf("redis slowlog: %w", err)
		}
		if err := env.slowlogAll(ctx, false); err != nil {
			return r, err
		}
		writeCommandStats(os.Stderr, name+" (slowlog, by script)", slowStats(entries, redisstate.ScriptNames()), r.Pages)
	}
	if o.commandStats && n > 0 {
		info, err := env.rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			return r, fmt.Errorf("redis commandstats: %w", err)
		}
		if err := os.WriteFile(filepath.Join(env.logDir, name+".commandstats"), []byte(info), 0o644); err != nil {
			return r, err
		}
		stats, err := parseCommandStats(info)
		if err != nil {
			return r, err
		}
		fmt.Fprintf(os.Stderr, "   %s: CPU s / 1,000 pages: workers %.3f, redis-server %.3f, nginx %.3f\n", name,
			perK(r.WorkerCPU, r.Pages), perK(r.RedisCPU, r.Pages), perK(r.NginxCPU, r.Pages))
		writeCommandStats(os.Stderr, name, stats, r.Pages)
	}
	return r, nil
}

// runAll starts every command at once and waits for all; past timeout they
// are killed.
func runAll(cmds []*exec.Cmd, timeout time.Duration) error {
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:i] {
				_ = s.Process.Kill()
				_ = s.Wait()
			}
			return err
		}
	}
	timer := time.AfterFunc(timeout, func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	})
	defer timer.Stop()
	var errs []error
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.Join(c.Args, " "), err))
		}
	}
	return errors.Join(errs...)
}

// freePort returns a port free on addr's host (":0": the wildcard).
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// renderScale is the section of BENCHMARKS.md: how it was obtained, the
// table, the targets.
func renderScale(o scaleOptions, runs []benchreport.ScaleRun, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d CPUs (%s), %s, by `make bench-scale` in %s.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), cpuModel(), runtime.Version(), took.Round(time.Second))
	fmt.Fprintf(&b, "The web: %d hosts x %d pages (internal/scaleweb), one nginx; every crawler process has --workers %d and is pinned to its own core with taskset "+
		"(embedded and 1 worker on core 0; 2 workers on cores 0 and 1); redis-server and nginx are not pinned and share the cores with them. "+
		"%d runs of each mode at each delay, the modes' order rotating. Load average at the runs' starts is in the last column "+
		"(other helpers' builds and tests ran on the machine too).\n\n", o.hosts, o.pages, o.workers, o.runs)
	sums := benchreport.SummarizeScale(runs)
	b.WriteString(benchreport.ScaleTable(sums))
	b.WriteString("\nTargets (issue 19):\n\n")
	for _, t := range benchreport.ScaleTargets(sums) {
		fmt.Fprintf(&b, "- %s\n", t)
	}
	return b.String()
}
