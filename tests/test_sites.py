"""Site configs and scratch targets: what is accepted, and a one-line error for the rest."""

import pytest

from conftest import REPO
from scratchbench.errors import ConfigError
from scratchbench.sites import (
    ScratchTarget,
    load_site_config,
    resolve_site_config,
    scratch_targets,
    with_scratch_targets,
)


def config(partitions=("batch",)):
    return {
        "systems": [
            {
                "name": "sys",
                "hostnames": [".*"],
                "partitions": [
                    {"name": p, "scheduler": "slurm", "launcher": "srun", "environs": ["builtin"]}
                    for p in partitions
                ],
            }
        ],
        "environments": [{"name": "builtin"}],
        "logging": [{"handlers": []}],
    }


def test_targets_become_features_and_extras():
    cfg = with_scratch_targets(
        config(("a", "b")),
        "sys",
        [
            ScratchTarget(
                "san", "$MYSANSCRATCH", "san", ["a", "b"], per_job=True, cleanup="scheduler"
            ),
            ScratchTarget("local", "/localscratch", "local-disk", ["b"]),
        ],
    )
    parts = {p["name"]: p for p in cfg["systems"][0]["partitions"]}
    assert parts["a"]["features"] == ["scratch_san"]
    assert parts["b"]["features"] == ["scratch_san", "scratch_local"]
    assert parts["b"]["extras"]["scratch_targets"]["local"]["path"] == "/localscratch"
    assert scratch_targets(cfg)["a"]["san"]["per_job"] is True


@pytest.mark.parametrize(
    "target,message",
    [
        (ScratchTarget("1bad", "/s", "san", ["batch"]), "expected a letter"),
        (ScratchTarget("s", "scratch", "san", ["batch"]), "must be absolute or start with"),
        (ScratchTarget("s", "/etc/", "san", ["batch"]), "refusing the system directory /etc"),
        (ScratchTarget("s", "/", "san", ["batch"]), "refusing the system directory /"),
        (ScratchTarget("s", "/s", "floppy", ["batch"]), "kind 'floppy'"),
        (ScratchTarget("s", "/s", "san", ["batch"], per_job=True), "set cleanup='scheduler'"),
        (ScratchTarget("s", "/s", "san", []), "at least one partition"),
        (
            ScratchTarget("s", "/s", "san", ["gpu"]),
            "names partition 'gpu', which system 'sys' does not have (it has: batch)",
        ),
        (
            ScratchTarget("s", "/s", "san", ["batch"], facts_command=["lctl", "get_param"]),
            "facts_command must be a shell command (a string)",
        ),
    ],
)
def test_bad_targets(target, message):
    with pytest.raises(ConfigError, match=".*") as err:
        with_scratch_targets(config(), "sys", [target])
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_duplicate_target_and_unknown_system():
    t = ScratchTarget("s", "/s", "san", ["batch"])
    with pytest.raises(ConfigError, match="declared twice"):
        with_scratch_targets(config(), "sys", [t, ScratchTarget("s", "/t", "nfs", ["batch"])])
    with pytest.raises(ConfigError, match="name system 'other'"):
        with_scratch_targets(config(), "other", [t])


@pytest.mark.parametrize("site", ["local", "example_lsf", "example_slurm"])
def test_shipped_site_configs_load_and_validate(site):
    cfg = load_site_config(resolve_site_config(site))
    targets = scratch_targets(cfg)
    assert all(targets.values()), "every partition reaches at least one scratch target"


def test_example_lsf_site_follows_seed_004():
    cfg = load_site_config(resolve_site_config("example_lsf"))
    parts = {p["name"]: p for p in cfg["systems"][0]["partitions"]}
    assert parts["hp12"]["access"] == ["-q hp12"] and parts["ehwfd"]["access"] == ["-q ehwfd"]
    assert {p["scheduler"] for p in parts.values()} == {"lsf_std"}
    san = parts["hp12"]["extras"]["scratch_targets"]["sanscratch"]
    assert san["path"] == "$MYSANSCRATCH" and san["per_job"]
    assert parts["ehwfd"]["extras"]["scratch_targets"]["localraid"]["path"] == "/localscratch"


@pytest.mark.parametrize(
    "body,message",
    [
        ("site_configuration = {\n  'systems': [\n", "line 2"),
        ("x = 1\n", "defines no site_configuration dict"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        (
            "site_configuration = {'systems': [{'name': 'x', 'hostnames': ['.*'], 'partitions': "
            "[{'name': 'p', 'scheduler': 'slurm'}]}], 'environments': [], 'logging': []}\n",
            "'launcher' is a required property",
        ),
        (
            "from scratchbench.sites import ScratchTarget, with_scratch_targets\n"
            "site_configuration = with_scratch_targets({'systems': [{'name': 's', 'hostnames': "
            "['.*'], 'partitions': [{'name': 'p', 'scheduler': 'slurm', 'launcher': 'srun'}]}], "
            "'environments': [], 'logging': []}, 's', [ScratchTarget('t', '/t', 'san', ['q'])])\n",
            "names partition 'q'",
        ),
    ],
)
def test_malformed_site_configs(tmp_path, body, message):
    path = tmp_path / "broken.py"
    path.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_site_config(path)
    assert message in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_site_lists_known_ones():
    with pytest.raises(ConfigError) as err:
        resolve_site_config("nosuchsite")
    assert "known sites: example_lsf, example_slurm, local" in str(err.value)


def test_workloads_file_is_complete():
    import yaml

    table = yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())
    for family in ("staging", "iotest", "metadata", "sweep", "ior", "mdtest"):
        assert set(table[family]) == {"quick", "nightly", "acceptance"}, family
    # seed 002: open/close at scale means at least 2048 files per node every night
    assert table["metadata"]["nightly"]["files_per_node"] >= 2048


def test_modules_are_looked_up_once_with_lmod_and_the_missing_ones_named():
    from cli.runner import LMOD_CMD, modules_not_found, resolve_missing_modules
    from scratchbench.sites import load_site_config

    config = load_site_config(REPO / "site_configs" / "local.py")
    env = {"LMOD_CMD": LMOD_CMD, "PATH": "/usr/bin:/bin"}
    assert modules_not_found(config, "embedded", env) == []
    mpich = next(e for e in config["environments"] if e["name"] == "gnu-mpich")
    mpich["modules"] = [{"name": "mpich/9.9", "path": mpich["modules"][0]["path"]}, "nosuch"]
    assert modules_not_found(config, "embedded", env) == [
        ("gnu-mpich", "mpich/9.9"),
        ("gnu-mpich", "nosuch"),
    ]
    # the fallback system has no gnu-mpich: nothing of it is looked up
    assert modules_not_found(config, "embedded-local:default", env) == []
    resolve_missing_modules(config, "embedded:batch", env)
    assert env["RFM_RESOLVE_MODULE_CONFLICTS"] == "y"
    # a site that keeps ReFrame's resolution on is left as it is
    config["general"][0]["resolve_module_conflicts"] = True
    env.pop("RFM_RESOLVE_MODULE_CONFLICTS")
    resolve_missing_modules(config, "embedded", env)
    assert "RFM_RESOLVE_MODULE_CONFLICTS" not in env


def test_the_workloads_file_is_parsed_once_per_version_and_named_when_malformed(
    tmp_path, monkeypatch
):
    import yaml

    from reframe_checks.lib.targets import load_workloads, workload

    path = tmp_path / "workloads.yaml"
    path.write_text("iotest:\n  quick: {ranks: 2}\n")
    monkeypatch.setenv("SCRATCHBENCH_WORKLOADS", str(path))
    first = workload("iotest", "quick")
    first["ranks"] = 99  # a caller's change never reaches the next caller
    assert workload("iotest", "quick") == {"ranks": 2, "time_limit": "10m"}
    path.write_text("iotest:\n  quick: {ranks: 4, time_limit: 5m}\n")  # a new version
    assert workload("iotest", "quick") == {"ranks": 4, "time_limit": "5m"}
    path.write_text("iotest: [unclosed\n")
    with pytest.raises(ValueError, match=rf"^workloads file {path}: while parsing"):
        load_workloads()
    path.write_text("- a list\n")
    with pytest.raises(ValueError, match="expected a mapping of check families"):
        load_workloads()
    shipped = load_workloads(REPO / "reframe_checks" / "workloads.yaml")
    assert shipped == yaml.safe_load((REPO / "reframe_checks" / "workloads.yaml").read_text())


def test_the_ior_route_module_is_looked_up_on_the_environments_modulepath(tmp_path):
    from cli.runner import LMOD_CMD, modules_not_found
    from scratchbench.sites import load_site_config

    (tmp_path / "ior-wrapper").mkdir()
    (tmp_path / "ior-wrapper" / "1.0.lua").write_text('whatis("IOR")\n')
    config = load_site_config(REPO / "site_configs" / "local.py")
    openmpi = next(e for e in config["environments"] if e["name"] == "gnu-openmpi")
    openmpi["extras"] = {"mpi": "openmpi", "ior": "module:ior-wrapper/1.0"}
    env = {"LMOD_CMD": LMOD_CMD, "PATH": "/usr/bin:/bin", "MODULEPATH": "/nonexistent"}
    assert modules_not_found(config, "embedded-local", env) == [("gnu-openmpi", "ior-wrapper/1.0")]
    # the environment's env_vars extend the MODULEPATH the job (and the lookup) sees
    openmpi["env_vars"] = [["MODULEPATH", f"${{MODULEPATH}}:{tmp_path}"]]
    assert modules_not_found(config, "embedded-local", env) == []
