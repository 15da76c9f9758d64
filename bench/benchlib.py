"""Shared by the Python benchmarks of bench/: a free loopback port, and a private nginx started and stopped."""
import os
import shutil
import signal
import socket
import subprocess


def free_port():
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(work, servers, http_extra=""):
    """Starts nginx with its prefix, logs and temp folders in `work`, serving the `server { … }` blocks `servers`."""
    os.makedirs(f"{work}/logs", exist_ok=True)
    os.makedirs(f"{work}/tmp", exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    with open(f"{work}/nginx.conf", "w") as f:
        f.write(f"""{user}worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  client_body_temp_path {work}/tmp; proxy_temp_path {work}/tmp; fastcgi_temp_path {work}/tmp; uwsgi_temp_path {work}/tmp; scgi_temp_path {work}/tmp;
{http_extra}{servers}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    subprocess.run([nginx, "-p", work + "/", "-c", f"{work}/nginx.conf", "-e", f"{work}/logs/error.log"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop_nginx(work):
    """Stops the nginx `start_nginx` started in `work`, if it runs."""
    try:
        with open(f"{work}/nginx.pid") as f:
            os.kill(int(f.read().strip()), signal.SIGQUIT)
    except (OSError, ValueError):
        pass
