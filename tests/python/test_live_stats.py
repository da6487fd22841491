"""Live statistics: the JSON-lines stream (`--stats-out`) and the POSTs to a
visualisation server (`--viz-url`), received here by a real HTTP server."""
import http.server
import json
import subprocess
import threading

import pytest

from conftest import mpirun


class Collector(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Collector.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    Collector.received = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Collector)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()


def test_live_statistics_stream_and_post(binary, tmp_path, server):
    data = tmp_path / "data"
    subprocess.run([binary, "synth", "--out", data, "--steps", "6", "--events-per-step", "3000"],
                   check=True, capture_output=True)
    stats = tmp_path / "stats.jsonl"
    summary = tmp_path / "summary.json"
    url = f"http://127.0.0.1:{server.server_address[1]}/api/anomalydata"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--no-provenance", "--input",
                                str(data / "tau-metrics-demo-{rank}.bp"), "--stats-out", str(stats),
                                "--viz-url", url, "--summary-out", str(summary), "--final-relabel", "false"],
                   check=True, capture_output=True)
    packets = [json.loads(line) for line in stats.read_text().splitlines()]
    assert len(packets) == 6  # one per step
    # The server got the same packets, as JSON POSTs to the given path.
    assert [(p, t) for p, t, _ in Collector.received] == [("/api/anomalydata", "application/json")] * 6
    assert [json.loads(b) for _, _, b in Collector.received] == packets

    s = json.loads(summary.read_text())
    for p in packets:
        assert p["version"] == 2 and isinstance(p["created_at"], int)
    # Every anomaly appears once in the per-rank data of some packet.
    seen = sum(d["n_anomalies"] for p in packets if "anomaly_stats" in p
               for a in p["anomaly_stats"]["anomaly"] for d in a["data"])
    assert seen == s["anomalies_in_situ"] > 0
    last = packets[-1]
    keys = {a["key"] for p in packets if "anomaly_stats" in p for a in p["anomaly_stats"]["anomaly"]}
    assert keys <= {f"0:{r}" for r in range(4)}
    # Function profiles cover every execution; the demo's counter is there.
    funcs = {f["name"]: f for f in last["anomaly_stats"]["func"]}
    assert sum(f["exclusive"]["count"] for f in funcs.values()) == s["executions"]
    assert funcs["compute"]["inclusive"]["mean"] > funcs["compute"]["exclusive"]["mean"]
    assert [c["counter"] for c in last["counter_stats"]] == ["PAPI_TOT_INS"]
    # Anomaly metrics: "all_data" accumulates, "new_data" covers only the
    # steps since the previous packet.
    total = {}
    for p in packets:
        for m in p.get("anomaly_metrics", []):
            total[m["_id"]] = total.get(m["_id"], 0) + m["new_data"]["score"]["count"]
            assert m["all_data"]["score"]["count"] >= m["new_data"]["score"]["count"]
    assert sum(total.values()) == s["anomalies_in_situ"]


def test_the_last_steps_are_sent_when_the_run_ends(binary, tmp_path):
    """8 steps with --stats-every 3: packets after steps 2 and 5, and one at
    the end for steps 6 and 7; with two programs, each function names its
    program."""
    for name, seed in (("alpha", 1), ("beta", 7)):
        subprocess.run([binary, "synth", "--out", tmp_path / name, "--binary", name, "--ranks", "2",
                        "--steps", "8", "--events-per-step", "3000", "--seed", str(seed)],
                       check=True, capture_output=True)
    stats = tmp_path / "stats.jsonl"
    summary = tmp_path / "summary.json"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--no-provenance",
                                "--input", str(tmp_path / "alpha" / "tau-metrics-alpha-{rank}.bp"),
                                "--input", str(tmp_path / "beta" / "tau-metrics-beta-{rank}.bp"),
                                "--stats-out", str(stats), "--stats-every", "3",
                                "--summary-out", str(summary), "--final-relabel", "false"],
                   check=True, capture_output=True)
    packets = [json.loads(line) for line in stats.read_text().splitlines()]
    assert [p["io_step"] for p in packets] == [2, 5, 7]
    s = json.loads(summary.read_text())
    seen = sum(d["n_anomalies"] for p in packets if "anomaly_stats" in p
               for a in p["anomaly_stats"]["anomaly"] for d in a["data"])
    assert seen == s["anomalies_in_situ"] > 0
    for p in packets:
        # Chimbuko's server needs anomaly_stats wherever anomaly_metrics is.
        assert "anomaly_metrics" not in p or "anomaly_stats" in p
    assert {f["app"] for f in packets[-1]["anomaly_stats"]["func"]} == {0, 1}


def test_a_dead_visualisation_server_does_not_stop_the_analysis(binary, tmp_path):
    data = tmp_path / "data"
    subprocess.run([binary, "synth", "--out", data, "--ranks", "2", "--steps", "3",
                    "--events-per-step", "500"], check=True, capture_output=True)
    res = subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--no-provenance", "--input",
                                      str(data / "tau-metrics-demo-{rank}.bp"),
                                      "--viz-url", "http://127.0.0.1:9/nothing"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("posting live statistics") == 1
