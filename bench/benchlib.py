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


def headless_chromium(window="1440,900"):
    """Debian's chromium through chromedriver, headless (HAUL_CHROMIUM and HAUL_CHROMEDRIVER override the paths)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("HAUL_CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=" + window, "--no-proxy-server", "--no-first-run"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(os.environ.get("HAUL_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)


# From a click on the first row of the dashboard's task list to its detail panel drawn, timed inside the page (not
# Selenium's round trips): milliseconds, or null after 30 s.
CLICK_TO_DETAIL_SCRIPT = """
    const done = arguments[arguments.length - 1];
    const row = document.querySelector("#task-list-inner .row[data-index='0']");
    const id = row.dataset.taskId, detail = document.getElementById('detail'), t0 = performance.now();
    row.querySelector('.name').click();
    const check = () => {
      if (detail.dataset.taskId === id) done(performance.now() - t0);
      else if (performance.now() - t0 > 30000) done(null);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
"""
