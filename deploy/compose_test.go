package deploy

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// repoRoot is the module root; the compose file's paths are relative to it.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

type composeFile struct {
	Services map[string]struct {
		Build       any               `yaml:"build"`
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		EnvFile     any               `yaml:"env_file"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Profiles    []string          `yaml:"profiles"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

func readCompose(t *testing.T, root string) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// TestComposeFile: the reference deployment has every service the
// operations docs name, each with a healthcheck; the gateways share one env
// file, the operator's git-ignored deploy/gateway.env made from the example,
// and differ by node id; only the front door is published beyond loopback;
// every file it mounts lives in the repository; and `docker-compose config`
// accepts it where installed.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	c := readCompose(t, root)
	for _, name := range []string{"redis", "nats1", "nats2", "nats3", "gateway1", "gateway2", "gateway3", "haproxy", "prometheus", "grafana"} {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("service %s missing", name)
			continue
		}
		if len(s.Profiles) > 0 {
			t.Errorf("service %s is behind a profile; the default topology needs it", name)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck", name)
		}
	}
	nodes := map[string]bool{}
	for _, name := range []string{"gateway1", "gateway2", "gateway3"} {
		s := c.Services[name]
		if s.Build != "." {
			t.Errorf("%s: build %v, want the repository's Dockerfile (.)", name, s.Build)
		}
		if s.EnvFile != "deploy/gateway.env" {
			t.Errorf("%s: env_file %v, want the operator's deploy/gateway.env (the example's key is public)", name, s.EnvFile)
		}
		id := s.Environment["LB_NODE_ID"]
		if id == "" || nodes[id] {
			t.Errorf("%s: LB_NODE_ID %q is empty or repeated", name, id)
		}
		nodes[id] = true
		// The Redis address and the replicas to wait for default to the
		// single redis; deploy/sentinel.env sets both for the Sentinel profile.
		if !strings.HasPrefix(s.Environment["LB_REDIS_URL"], "${LB_REDIS_URL:-redis://redis:") || strings.Count(s.Environment["LB_NATS_URL"], "nats://") != 3 ||
			s.Environment["LB_REDIS_REPLICAS"] != "${LB_REDIS_REPLICAS:-0}" {
			t.Errorf("%s: LB_REDIS_URL %q, LB_REDIS_REPLICAS %q, LB_NATS_URL %q", name, s.Environment["LB_REDIS_URL"], s.Environment["LB_REDIS_REPLICAS"], s.Environment["LB_NATS_URL"])
		}
		// Prometheus scrapes the metrics address: /metrics on the main port
		// sums the board label for an address that is neither loopback nor
		// a trusted proxy, such as Prometheus's on the compose network.
		_, port, err := net.SplitHostPort(s.Environment["LB_METRICS_ADDR"])
		if err != nil {
			t.Errorf("%s: LB_METRICS_ADDR %q: %v", name, s.Environment["LB_METRICS_ADDR"], err)
		} else if targets, _ := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "targets-compose", "gateways.json")); !strings.Contains(string(targets), `"`+name+":"+port+`"`) {
			t.Errorf("deploy/prometheus/targets-compose/gateways.json does not scrape %s:%s (its LB_METRICS_ADDR)", name, port)
		}
	}
	if !strings.Contains(strings.Join(c.Services["haproxy"].Ports, " "), "8080:8080") {
		t.Errorf("haproxy ports %v: want the front door on 8080", c.Services["haproxy"].Ports)
	}
	// Published ports other than the front door have no login: loopback only.
	for name, s := range c.Services {
		for _, p := range s.Ports {
			if p != "8080:8080" && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q on every interface; want 127.0.0.1:…", name, p)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "gateway.env.example")); err != nil {
		t.Errorf("the template of deploy/gateway.env: %v", err)
	}
	if out, err := exec.Command("git", "-C", root, "check-ignore", "-q", "deploy/gateway.env").CombinedOutput(); err != nil {
		t.Errorf("deploy/gateway.env, which holds the key, is not git-ignored: %v %s", err, out)
	}
	if di, err := os.ReadFile(filepath.Join(root, ".dockerignore")); err != nil || !strings.Contains("\n"+string(di), "\ndeploy/gateway.env\n") {
		t.Errorf(".dockerignore does not keep deploy/gateway.env (the key) out of the build context (%v)", err)
	}
	var clusterNodes int
	for name, s := range c.Services {
		for _, p := range s.Profiles {
			if p == "redis-cluster" && strings.HasPrefix(name, "redis-c") {
				clusterNodes++
			}
		}
		// Every bind mount names a file or directory of the repository.
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, "./") {
				continue // a named volume
			}
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("service %s mounts %s: %v", name, src, err)
			}
		}
		if f, ok := s.EnvFile.(string); ok && f != "deploy/gateway.env" { // the operator's copy, not in the repository
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("service %s env_file: %v", name, err)
			}
		}
	}
	if clusterNodes < 6 {
		t.Errorf("the redis-cluster profile has %d nodes, want 6", clusterNodes)
	}

	redisConf, err := os.ReadFile(filepath.Join(root, "deploy", "redis", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nappendonly yes", "\nappendfsync everysec", "\nmaxmemory-policy noeviction"} {
		if !strings.Contains(string(redisConf), want) {
			t.Errorf("deploy/redis/redis.conf lacks %q", strings.TrimSpace(want))
		}
	}
	if cmd := strings.Join(c.Services["redis"].Command, " "); !strings.Contains(cmd, "redis.conf") {
		t.Errorf("redis command %q does not load the mounted redis.conf", cmd)
	}

	if _, err := exec.LookPath("docker-compose"); err == nil {
		// A copy of the tree with the operator's env file in place, as after
		// the README's cp step.
		tree := t.TempDir()
		if out, err := exec.Command("cp", "-r", filepath.Join(root, "docker-compose.yml"), filepath.Join(root, "Dockerfile"), filepath.Join(root, "deploy"), tree).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		if out, err := exec.Command("cp", filepath.Join(tree, "deploy", "gateway.env.example"), filepath.Join(tree, "deploy", "gateway.env")).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		for _, args := range [][]string{{"config", "-q"}, {"--profile", "redis-cluster", "config", "-q"},
			{"--env-file", "deploy/sentinel.env", "--profile", "redis-sentinel", "config", "-q"}} {
			cmd := exec.Command("docker-compose", args...)
			cmd.Dir = tree
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("docker-compose %v: %v\n%s", args, err, out)
			}
		}
	} else {
		t.Log("docker-compose not installed: `docker-compose config` not run")
	}
}

// TestComposeSentinel: the redis-sentinel profile is a master, two
// replicas of it and three Sentinels monitoring it with a quorum of two,
// each with a healthcheck; the replicas and Sentinels name the master the
// Sentinel config monitors; deploy/sentinel.env points the gateways at
// every Sentinel with the monitored master's name and durable acks on.
func TestComposeSentinel(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	c := readCompose(t, root)
	for _, name := range []string{"redis-m", "redis-r1", "redis-r2", "sentinel1", "sentinel2", "sentinel3"} {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("service %s missing", name)
			continue
		}
		if len(s.Profiles) != 1 || s.Profiles[0] != "redis-sentinel" {
			t.Errorf("service %s profiles %v, want [redis-sentinel]", name, s.Profiles)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("service %s has no healthcheck", name)
		}
		cmd := strings.Join(s.Command, " ")
		switch {
		case strings.HasPrefix(name, "redis-r") && !strings.Contains(cmd, "--replicaof redis-m 6379"):
			t.Errorf("%s: command %q does not replicate redis-m", name, cmd)
		case strings.HasPrefix(name, "sentinel") && (!strings.Contains(cmd, "--sentinel") || !strings.Contains(cmd, "announce-ip "+name)):
			t.Errorf("%s: command %q is not a Sentinel announcing itself", name, cmd)
		}
	}
	conf, err := os.ReadFile(filepath.Join(root, "deploy", "redis", "sentinel.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conf), "\nsentinel monitor lbmaster redis-m 6379 2\n") {
		t.Error("deploy/redis/sentinel.conf does not monitor redis-m as lbmaster with a quorum of 2")
	}
	env, err := os.ReadFile(filepath.Join(root, "deploy", "sentinel.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nLB_REDIS_URL=redis-sentinel://sentinel1:26379,sentinel2:26379,sentinel3:26379/lbmaster\n",
		"\nLB_REDIS_REPLICAS=1\n",
		"\nCOMPOSE_PROFILES=redis-sentinel\n",
	} {
		if !strings.Contains("\n"+string(env), want) {
			t.Errorf("deploy/sentinel.env lacks %q", strings.TrimSpace(want))
		}
	}
}

// TestDockerfile: multi-stage, a static binary, a non-root user and a
// healthcheck that needs no shell or curl.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var from, user, health, static bool
	stages := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			stages++
			from = true
		case "USER":
			user = len(f) > 1 && !strings.HasPrefix(f[1], "root") && !strings.HasPrefix(f[1], "0")
		case "HEALTHCHECK":
			health = strings.Contains(line, "healthcheck") || strings.HasSuffix(line, "\\")
		case "RUN":
			static = static || strings.Contains(line, "CGO_ENABLED=0")
		}
	}
	if !from || stages < 2 || !user || !health || !static {
		t.Errorf("Dockerfile: stages %d, non-root USER %v, HEALTHCHECK %v, CGO_ENABLED=0 %v", stages, user, health, static)
	}
	if !strings.Contains(string(b), `"healthcheck"]`) {
		t.Error("the HEALTHCHECK does not run `wsgateway healthcheck` (the image has no curl)")
	}
}

// TestProxyAndMonitoringConfigs: HAProxy checks readiness and keeps
// WebSocket tunnels open; Prometheus loads the rules; the rules and
// prometheus.yml pass promtool where installed.
func TestProxyAndMonitoringConfigs(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	cfg, err := os.ReadFile(filepath.Join(root, "deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"option httpchk", "uri /readyz", "timeout tunnel", "option redispatch", `"${GW1_ADDR}"`, `"${GW3_ADDR}"`} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	if strings.Contains(string(cfg), "balance source") || strings.Contains(string(cfg), "stick-table") {
		t.Error("haproxy.cfg pins sessions; every gateway serves every board")
	}
	if haproxy, err := exec.LookPath("haproxy"); err == nil {
		cmd := exec.Command(haproxy, "-c", "-f", filepath.Join(root, "deploy", "haproxy", "haproxy.cfg"))
		cmd.Env = append(os.Environ(), "LB_BIND=127.0.0.1:1", "LB_STATS_BIND=127.0.0.1:2", "GW1_ADDR=127.0.0.1:3", "GW2_ADDR=127.0.0.1:4", "GW3_ADDR=127.0.0.1:5")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("haproxy -c: %v\n%s", err, out)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		files, _ := filepath.Glob(filepath.Join(root, "deploy", "prometheus", "rules", "*.yml"))
		if len(files) == 0 {
			t.Fatal("no alert rules under deploy/prometheus/rules")
		}
		if out, err := exec.Command(promtool, append([]string{"check", "rules"}, files...)...).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
		if out, err := exec.Command(promtool, "check", "config", "--syntax-only", filepath.Join(root, "deploy", "prometheus", "prometheus.yml")).CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	}
}
