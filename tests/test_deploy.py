"""The deployment files agree with the code and with each other.

docker-compose.yml (the distributed shape), deploy/compose.embedded.yml, deploy/Dockerfile, the CI
workflow and the docs that describe them are read as files: no Docker engine is needed. Compose's
`${VAR:-default}` interpolation is applied here so the values checked are the ones a container gets.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.settings_catalogue import TUNING_GROUPS
from hivemem.config import Settings
from search.opensearch.client import parse_url
from search.opensearch.tuning import OpenSearchTuning
from workers.queues import QUEUES

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "docker-compose.yml"
EMBEDDED = REPO / "deploy" / "compose.embedded.yml"
COMPOSE_FILES = (COMPOSE, EMBEDDED)
DOCKERFILE = REPO / "deploy" / "Dockerfile"
ENV_EXAMPLE = REPO / "deploy" / "compose.env.example"
DEPLOY_README = REPO / "deploy" / "README.md"
WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"
SPEC_COMMIT = "fbe9edebac41d098c67e2d379667184368c4ab6c"

# Services that run the hivemem image, and those among them that serve no HTTP.
IMAGE_SERVICES = ("opensearch-setup", "hivemem", "worker", "worker-gpu", "beat", "flower")
NO_HTTP = ("opensearch-setup", "worker", "worker-gpu", "beat", "flower")
# Everything that reads or writes memories waits for the index to exist.
STORE_USERS = ("hivemem", "worker", "worker-gpu", "beat")

# ${NAME}, ${NAME:-default} and the $$ escape: the forms these files use.
_VARIABLE = re.compile(r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\})")


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's interpolation: `:-` takes the default when the variable is unset or empty."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            return env.get(match["name"]) or (match["default"] or "")

        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    return value


def load_compose(path: Path = COMPOSE, env: dict[str, str] | None = None) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return interpolate(loaded, env or {})


def services(path: Path = COMPOSE, env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = load_compose(path, env)["services"]
    return found


def argv(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def option(args: list[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value`, None when absent."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def queues(service: dict[str, Any]) -> set[str]:
    value = option(argv(service), "--queues")
    assert value, f"{service['command']} names no --queues"
    return set(value.split(","))


def env_example() -> dict[str, str]:
    """The example's assignments, commented out or not."""
    pairs = re.findall(r"^#?([A-Z][A-Z0-9_]*)=(.*)$", ENV_EXAMPLE.read_text(encoding="utf-8"), re.M)
    return dict(pairs)


def pyproject_requirement(extra: str, package: str) -> str:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [r for r in data["project"]["optional-dependencies"][extra] if re.match(rf"{package}\b", r)]
    assert len(wanted) == 1, wanted
    return str(wanted[0])


# -- compose: the distributed shape ---------------------------------------------------------------


def test_compose_runs_every_part_of_the_distributed_shape() -> None:
    assert set(services()) == {"opensearch", "redis", *IMAGE_SERVICES}


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("hivemem", ["hivemem", "serve"]),
        ("opensearch-setup", ["hivemem", "opensearch", "setup"]),
        ("beat", ["hivemem", "beat"]),
    ],
)
def test_one_command_services(name: str, command: list[str]) -> None:
    assert argv(services()[name]) == command


def test_hivemem_services_share_one_environment() -> None:
    every = services()
    environments = [every[name]["environment"] for name in IMAGE_SERVICES]
    assert all(env == environments[0] for env in environments)
    env = environments[0]
    assert env["HIVEMEM_STORE_URL"] == "opensearch+http://opensearch:9200"
    assert parse_url(env["HIVEMEM_STORE_URL"]).host == "opensearch"
    assert env["HIVEMEM_BROKER_URL"] == "redis://redis:6379/0"
    # The gateway binds all interfaces inside its container, which the server refuses without this.
    assert env["HIVEMEM_HOST"] == "0.0.0.0"
    assert env["HIVEMEM_ALLOW_UNAUTHENTICATED_NETWORK"] == "true"
    # ...and names the hosts requests may carry: the service's own name, no wildcard.
    assert env["HIVEMEM_ALLOWED_HOSTS"] == "hivemem"
    cpu_image = {every[name]["image"] for name in IMAGE_SERVICES if name != "worker-gpu"}
    assert len(cpu_image) == 1


@pytest.mark.parametrize("env", [{}, env_example()], ids=["defaults", "security-on"])
def test_compose_environment_is_valid_settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    environment = services(env=env)["hivemem"]["environment"]
    known = set(Settings.model_fields).union(*(group.model_fields for group in TUNING_GROUPS))
    unknown = [key for key in environment if key.removeprefix("HIVEMEM_").lower() not in known]
    assert unknown == []
    for key, value in environment.items():
        monkeypatch.setenv(key, str(value))
    settings = Settings()  # parses every value as a container would, and applies the safety checks
    assert settings.broker_url == "redis://redis:6379/0"
    assert settings.resolved_store_url().startswith("opensearch+http")
    # One node cannot hold replicas of its own shards: the indices would stay yellow.
    assert OpenSearchTuning().opensearch_replicas == 0


def test_cpu_workers_are_scalable() -> None:
    worker = services()["worker"]
    args = argv(worker)
    assert args[:2] == ["hivemem", "worker"]
    assert queues(worker) == {"embed", "resolve", "bulk", "ingest", "consolidate", "maintenance"}
    assert option(args, "--device") == "cpu"
    assert option(args, "--concurrency") == "2"
    assert worker["build"]["target"] == "cpu"
    # `--scale worker=N` fails on a fixed container name or a published host port.
    assert "container_name" not in worker
    assert "ports" not in worker
    assert "profiles" not in worker


def test_gpu_worker_is_an_opt_in_profile_with_an_nvidia_gpu() -> None:
    every = services()
    gpu = every["worker-gpu"]
    args = argv(gpu)
    assert args[:2] == ["hivemem", "worker"]
    assert queues(gpu) == {"embed", "rerank"}
    assert option(args, "--device") == "cuda"
    assert gpu["profiles"] == ["gpu"]
    assert gpu["build"]["target"] == "cuda"
    assert gpu["image"] != every["worker"]["image"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    # Every other service starts with a plain `docker compose up`.
    assert [name for name, s in every.items() if "profiles" in s] == ["worker-gpu"]


def test_every_queue_has_a_worker_and_every_worker_queue_exists() -> None:
    every = services()
    consumed = queues(every["worker"]) | queues(every["worker-gpu"])
    assert consumed == set(QUEUES)


def test_flower_watches_the_broker_on_the_loopback() -> None:
    every = services()
    flower = every["flower"]
    args = argv(flower)
    assert args[0] == "celery"
    assert option(args, "--app") == "workers.celery_app"
    assert importlib.util.find_spec("workers.celery_app") is not None
    assert option(args, "--broker") == every["hivemem"]["environment"]["HIVEMEM_BROKER_URL"]
    assert option(args, "--port") == "5555"
    # Celery's own options go before the sub-command; after it, Flower ignores them with a warning.
    assert args.index("flower") > max(i for i, a in enumerate(args) if a.startswith(("--app", "--broker")))
    assert flower["ports"] == ["127.0.0.1:5555:5555"]


def test_health_checks() -> None:
    every = services()
    assert "/readyz" in " ".join(every["hivemem"]["healthcheck"]["test"])
    assert "_cluster/health" in " ".join(every["opensearch"]["healthcheck"]["test"])
    assert "ping" in every["redis"]["healthcheck"]["test"]
    # The image's own check asks /readyz: services that serve no HTTP would never become healthy.
    assert all(every[name]["healthcheck"] == {"disable": True} for name in NO_HTTP)


def test_start_order() -> None:
    every = services()
    for name in STORE_USERS:
        assert every[name]["depends_on"] == {
            "opensearch": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
            "opensearch-setup": {"condition": "service_completed_successfully"},
        }, name
    assert every["opensearch-setup"]["depends_on"] == {"opensearch": {"condition": "service_healthy"}}
    assert every["opensearch-setup"]["restart"] == "no"
    # A service waited on as healthy must have a health check to become healthy.
    for service in every.values():
        for dependency, rule in service.get("depends_on", {}).items():
            if rule["condition"] == "service_healthy":
                assert "test" in every[dependency]["healthcheck"], dependency


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_published_ports_are_on_the_loopback_only(path: Path) -> None:
    published = [port for s in services(path).values() for port in s.get("ports", [])]
    assert published
    assert [port for port in published if not str(port).startswith("127.0.0.1:")] == []
    assert all("network_mode" not in s for s in services(path).values())


def test_gateway_port() -> None:
    assert services()["hivemem"]["ports"] == ["127.0.0.1:8765:8765"]
    assert services(EMBEDDED)["hivemem"]["ports"] == ["127.0.0.1:8765:8765"]


def node_script_version() -> str:
    """The OpenSearch release ``scripts/opensearch-node`` runs by default."""
    found = re.search(r'^DEFAULT_VERSION = "([0-9.]+)"$', (REPO / "scripts" / "opensearch-node").read_text(), re.M)
    assert found, "scripts/opensearch-node names no DEFAULT_VERSION"
    return found.group(1)


def test_opensearch_single_node_with_its_security_plugin_off_by_default() -> None:
    opensearch = services()["opensearch"]
    # The release the tests' node runs (scripts/opensearch-node), so what CI passed is what deploys.
    assert opensearch["image"] == f"opensearchproject/opensearch:{node_script_version()}"
    env = opensearch["environment"]
    assert env["discovery.type"] == "single-node"
    assert env["DISABLE_SECURITY_PLUGIN"] == "true"
    assert env["DISABLE_INSTALL_DEMO_CONFIG"] == "true"
    heap = re.fullmatch(r"-Xms(\S+) -Xmx(\S+)", env["OPENSEARCH_JAVA_OPTS"])
    assert heap is not None and heap[1] == heap[2]
    assert opensearch["ulimits"]["memlock"] == {"soft": -1, "hard": -1}
    assert opensearch["ulimits"]["nofile"]["soft"] >= 65536
    assert "opensearch-data:/usr/share/opensearch/data" in opensearch["volumes"]


def test_security_switch_from_the_env_example() -> None:
    example = env_example()
    password = example["OPENSEARCH_INITIAL_ADMIN_PASSWORD"]
    every = services(env=example)
    env = every["opensearch"]["environment"]
    assert env["DISABLE_SECURITY_PLUGIN"] == "false"
    assert env["DISABLE_INSTALL_DEMO_CONFIG"] == "false"
    assert env["OPENSEARCH_INITIAL_ADMIN_PASSWORD"] == password
    target = parse_url(every["hivemem"]["environment"]["HIVEMEM_STORE_URL"])
    assert (target.use_ssl, target.username, target.password, target.host, target.port) == (
        True,
        "admin",
        password,
        "opensearch",
        9200,
    )
    # The health check must still pass once plain HTTP is refused.
    assert "https://localhost:9200" in " ".join(every["opensearch"]["healthcheck"]["test"])


def test_every_compose_variable_is_in_the_env_example() -> None:
    used = {m["name"] for m in _VARIABLE.finditer(COMPOSE.read_text(encoding="utf-8")) if m["name"]}
    assert used == set(env_example())


def test_redis_keeps_its_queue_across_restarts() -> None:
    redis = services()["redis"]
    args = argv(redis)
    assert option(args, "--appendonly") == "yes"
    assert option(args, "--appendfsync") == "everysec"
    assert "redis-data:/data" in redis["volumes"]


def test_the_readme_recipe_runs_a_durable_redis() -> None:
    section = scale_out_section()
    recipe = next(line for line in section.splitlines() if line.startswith("$ redis-server"))
    assert "--appendonly yes" in recipe and "--appendfsync everysec" in recipe


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_named_volumes_are_declared(path: Path) -> None:
    compose = load_compose(path)
    named = {
        volume.split(":", 1)[0]
        for s in compose["services"].values()
        for volume in s.get("volumes", [])
        if not volume.startswith((".", "/", "~"))
    }
    assert named
    assert named == set(compose["volumes"])


def test_embedded_compose_is_one_sqlite_process() -> None:
    (name, service), *others = services(EMBEDDED).items()
    assert (name, others) == ("hivemem", [])
    assert "HIVEMEM_BROKER_URL" not in service["environment"]
    assert "HIVEMEM_STORE_URL" not in service["environment"]
    assert "hivemem-data:/data" in service["volumes"]


# -- the Dockerfile -------------------------------------------------------------------------------


@dataclass
class Stage:
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def text(self) -> str:
        return "\n".join(args for _, args in self.instructions)


@cache
def dockerfile() -> tuple[dict[str, Stage], list[str]]:
    """Stages by name, and the names in file order; ARGs declared before the first FROM are substituted."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    global_args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    order: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, args = line.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", args, re.I)
            assert match and match[2], f"unnamed stage: {line}"
            base = interpolate(match[1], global_args)
            stages[match[2]] = Stage(base)
            order.append(match[2])
        elif not order:
            assert keyword == "ARG", line
            name, _, default = args.partition("=")
            global_args[name] = default
        else:
            stages[order[-1]].instructions.append((keyword, args))
    return stages, order


def test_two_final_targets_and_cpu_by_default() -> None:
    stages, order = dockerfile()
    assert {"cpu", "cuda"} <= set(stages)
    # A plain `docker build` builds the last stage: that should be the small CPU image.
    assert order[-1] == "cpu"
    assert stages["cpu"].base == "python:3.11-slim"
    assert re.fullmatch(r"nvidia/cuda:12\.[\d.]+-(runtime|base)-ubuntu[\d.]+", stages["cuda"].base)
    assert "python3.11" in stages["cuda"].text()


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: p.name)
def test_compose_builds_name_existing_dockerfiles_and_stages(path: Path) -> None:
    stages, _ = dockerfile()
    builds = [s["build"] for s in services(path).values() if "build" in s]
    assert builds
    for build in builds:
        assert (path.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
        assert build["target"] in stages


@pytest.mark.parametrize(
    ("stage", "extras"),
    [
        ("cpu", "embed-torch,ingest,distributed,opensearch,otel"),
        ("cuda", "embed-gpu,ingest,distributed,opensearch,otel"),
    ],
)
def test_images_install_their_extras(stage: str, extras: str) -> None:
    stages, _ = dockerfile()
    assert f"pip install '.[{extras}]'" in stages[stage].text()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(extras.split(",")) <= set(declared)


@pytest.mark.parametrize("stage", ["cpu", "cuda"])
def test_images_run_the_server_unprivileged_and_offline(stage: str) -> None:
    image = dockerfile()[0][stage]
    assert image.all("USER")[-1] not in ("root", "0")
    assert "/data" in image.all("VOLUME")[-1]
    assert any(re.search(r"\bHF_HUB_OFFLINE=1\b", env) for env in image.all("ENV"))
    assert any(re.search(r"\bHIVEMEM_DATA_DIR=/data\b", env) for env in image.all("ENV"))
    assert json.loads(image.all("CMD")[-1]) == ["hivemem", "serve"]


def test_copied_sources_exist() -> None:
    stages, _ = dockerfile()
    copies = [args.split() for stage in stages.values() for args in stage.all("COPY") if "--from" not in args]
    assert copies
    for *sources, _target in copies:
        for source in sources:
            assert (REPO / source).exists(), source


def test_torch_pins_agree_with_pyproject() -> None:
    """The images and CI install torch before hivemem, from the right index: their pin must match the extra's,
    or pip would replace the CPU build with PyPI's CUDA one."""
    cpu_pin = pyproject_requirement("embed-torch", "torch")
    assert cpu_pin.startswith("torch==")
    stages, _ = dockerfile()
    cpu = f"pip install {cpu_pin} --index-url https://download.pytorch.org/whl/cpu"
    assert cpu in stages["cpu"].text()
    assert cpu in WORKFLOW.read_text(encoding="utf-8")
    gpu_spec = pyproject_requirement("embed-gpu", "torch")
    assert f"pip install '{gpu_spec}' --index-url" in stages["cuda"].text()


# -- the CI workflow ------------------------------------------------------------------------------


def workflow() -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True.
    assert "on" in loaded or True in loaded
    return loaded


def step_index(steps: list[dict[str, Any]], predicate: Any) -> int:
    found = [i for i, step in enumerate(steps) if predicate(step)]
    assert found, "no such step"
    return found[0]


def readme_test_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"\*\*Run the whole test suite\*\*.*?```console\n\$ (.+?)\n", readme, re.S)
    assert command is not None
    return command.group(1)


def test_every_ci_job_runs_the_readme_test_command_with_its_services() -> None:
    wf = workflow()
    assert wf["jobs"]
    for name, job in wf["jobs"].items():
        steps = job["steps"]
        test = step_index(steps, lambda s: s.get("run", "").strip() == readme_test_command())
        python = step_index(steps, lambda s: str(s.get("uses", "")).startswith("actions/setup-python"))
        redis = step_index(steps, lambda s: "install" in s.get("run", "") and "redis-server" in s.get("run", ""))
        spec = step_index(steps, lambda s: "opensearch-project/opensearch-api-specification" in s.get("run", ""))
        assert max(python, redis, spec) < test, name
        assert steps[python]["with"]["python-version"] == "3.11"
        assert "../shared/opensearch-api-spec" in steps[spec]["run"]
        assert str(job["runs-on"]).startswith("ubuntu")
    assert wf["env"]["OPENSEARCH_API_SPEC_COMMIT"] == SPEC_COMMIT


def test_ci_runs_the_suite_against_a_real_opensearch_cluster() -> None:
    jobs = [job for job in workflow()["jobs"].values() if "opensearch" in job.get("services", {})]
    assert len(jobs) == 1
    job = jobs[0]
    service = job["services"]["opensearch"]
    assert service["image"] == f"opensearchproject/opensearch:{node_script_version()}"
    assert service["env"]["discovery.type"] == "single-node"
    assert service["env"]["DISABLE_SECURITY_PLUGIN"] == "true"
    assert "--health-cmd" in service["options"] and "_cluster/health" in service["options"]
    assert "9200:9200" in service["ports"]
    target = parse_url(job["env"]["HIVEMEM_TEST_OPENSEARCH_URL"])
    assert (target.host, target.port, target.use_ssl) == ("localhost", 9200, False)


def test_ci_clones_the_spec_the_tests_use_here() -> None:
    source = REPO.parent / "shared" / "opensearch-api-spec" / "SOURCE.md"
    if not source.is_file():
        pytest.skip("no local copy of the OpenSearch API specification")
    assert SPEC_COMMIT in source.read_text(encoding="utf-8")


# -- the docs -------------------------------------------------------------------------------------


def scale_out_section() -> str:
    return (REPO / "docs" / "scale-out.md").read_text(encoding="utf-8")


def test_readme_scale_out_commands_match_the_compose_file() -> None:
    section = scale_out_section()
    every = services()
    assert "$ docker compose up -d\n" in section
    assert "localhost:8765/readyz" in section
    scaled = re.findall(r"--scale ([\w-]+)=\d+", section)
    assert scaled and set(scaled) <= set(every)
    profiles = set(re.findall(r"--profile ([\w-]+)", section))
    assert profiles and profiles <= {p for s in every.values() for p in s.get("profiles", [])}
    assert "hivemem worker" in section and "hivemem serve" in section and "redis-server" in section
    assert "(../deploy/README.md)" in section


def test_deploy_readme_describes_every_service_and_queue() -> None:
    text = DEPLOY_README.read_text(encoding="utf-8")
    assert [name for name in services() if f"`{name}`" not in text] == []
    assert [queue for queue in QUEUES if f"`{queue}`" not in text] == []


@pytest.mark.parametrize("path", [REPO / "README.md", DEPLOY_README], ids=["README", "deploy/README"])
def test_relative_links_exist(path: Path) -> None:
    targets = re.findall(r"\]\(([^)#:\s]+)\)", path.read_text(encoding="utf-8"))
    assert targets
    assert [t for t in targets if not (path.parent / t).exists()] == []
