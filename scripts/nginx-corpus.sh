#!/usr/bin/env bash
# Serve the unpacked real corpus with nginx on its loopback addresses.
#
#   scripts/nginx-corpus.sh start CORPUS_ROOT STATE_DIR [PORT]   # writes STATE_DIR/nginx.conf, starts nginx
#   scripts/nginx-corpus.sh stop STATE_DIR                       # stops the nginx started by "start"
#   scripts/nginx-corpus.sh count STATE_DIR                      # requests logged so far (all servers)
#   scripts/nginx-corpus.sh reset STATE_DIR                      # empties the access logs
#
# CORPUS_ROOT holds one folder per loopback IP (127.0.0.2, ...), as unpacked by
# internal/testweb.Corpus(). One server block per IP, all on PORT (default 80,
# so the corpus's port-less absolute links resolve as they are written),
# autoindex on, symlinks followed, and one access log per server with $msec so
# requests can be counted and timed. nginx runs in the foreground of a
# background job owned by this script's caller; its pid is in STATE_DIR/nginx.pid.
set -euo pipefail

cmd=${1:?usage: nginx-corpus.sh start|stop|count|reset ...}

case "$cmd" in
start)
	root=${2:?corpus root}
	state=${3:?state dir}
	port=${4:-80}
	mkdir -p "$state/logs" "$state/tmp"
	root=$(cd "$root" && pwd)
	state=$(cd "$state" && pwd)
	conf="$state/nginx.conf"
	{
		echo "worker_processes 1;"
		echo "pid $state/nginx.pid;"
		echo "error_log $state/logs/error.log warn;"
		echo "events { worker_connections 1024; }"
		echo "http {"
		echo "  include /etc/nginx/mime.types;"
		echo "  default_type application/octet-stream;"
		echo "  sendfile on; tcp_nopush on; keepalive_requests 100000; keepalive_timeout 60s;"
		echo "  disable_symlinks off;"
		echo "  client_body_temp_path $state/tmp/body; proxy_temp_path $state/tmp/proxy;"
		echo "  fastcgi_temp_path $state/tmp/fastcgi; uwsgi_temp_path $state/tmp/uwsgi; scgi_temp_path $state/tmp/scgi;"
		echo "  log_format bench '\$msec \$remote_addr \$host \"\$request\" \$status \$body_bytes_sent \$request_time';"
		for dir in "$root"/*/; do
			ip=$(basename "$dir")
			[[ $ip =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || continue
			echo "  server {"
			echo "    listen $ip:$port;"
			echo "    server_name $ip;"
			echo "    root $root/$ip;"
			echo "    autoindex on;"
			echo "    access_log $state/logs/access-$ip.log bench;"
			echo "  }"
		done
		echo "}"
	} >"$conf"
	nginx -t -q -c "$conf" -p "$state" -g 'daemon off;'
	nginx -c "$conf" -p "$state" -g 'daemon off;' &
	for _ in $(seq 50); do
		[[ -s $state/nginx.pid ]] && break
		sleep 0.1
	done
	[[ -s $state/nginx.pid ]] || { echo "nginx did not start; see $state/logs/error.log" >&2; exit 1; }
	;;
stop)
	state=${2:?state dir}
	if [[ -s $state/nginx.pid ]]; then
		pid=$(cat "$state/nginx.pid")
		kill -QUIT "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	;;
count)
	state=${2:?state dir}
	cat "$state"/logs/access-*.log 2>/dev/null | wc -l
	;;
reset)
	state=${2:?state dir}
	for f in "$state"/logs/access-*.log; do
		[[ -e $f ]] && : >"$f"
	done
	;;
*)
	echo "unknown command $cmd" >&2
	exit 2
	;;
esac
