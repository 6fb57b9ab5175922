"""`trainstack estimate` (no spec file) and `trainstack cost SPEC`: numbers, consistency with the planner and
the sizing model, the refusals (exit 2) and notes by their codes and fields, and the CPU step under offload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api, sizing
from generator.catalog import load_catalog
from generator.cli import main
from generator.estimate import EstimateError, cost_report, data_parallel_degree, estimate
from generator.estimate import events as ev
from generator.spec import codes as spec_codes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {p.stem: p for p in (ROOT / "examples").glob("*.yaml")}
GB = 10**9
GiB = 2**30


def run(*args: str) -> tuple[int, str]:
    """Invoke the CLI in-process; the output holds stdout and stderr (click >= 8.2)."""
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def refusal(*args: str) -> EstimateError:
    """The error ``estimate`` raises for these flags (the CLI's --debug lets it through)."""
    result = CliRunner().invoke(main, ["--debug", "estimate", *args])
    assert isinstance(result.exception, EstimateError), result.output
    return result.exception


def codes(warnings: list[dict]) -> list[str]:
    return [w["code"] for w in warnings]


def run_json(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


# ------------------------------------------------------------------------------------------- estimate


def test_zero_paper_example_7_5b_zero3_dp64() -> None:
    data = run_json("estimate", "--params", "7.5e9", "--gpus", "64", "--zero", "3", "--framework", "zero-paper")
    b = data["per_gpu_bytes"]
    assert set(b) == {"weights", "gradients", "optimizer_states", "activations", "reserve", "total"}
    assert all(isinstance(v, int) for v in b.values())
    assert b["total"] == b["weights"] + b["gradients"] + b["optimizer_states"] + b["activations"] + b["reserve"]
    # ZeRO (Rajbhandari et al. 2020) Sec. 5: P_os+g+p = 16 * 7.5e9 / 64 = 1.875 GB ("1.9GB" in Figure 1).
    assert b["gradients"] == 2 * 7_500_000_000 // 64
    assert b["optimizer_states"] == 12 * 7_500_000_000 // 64
    ms = data["model_states"]
    assert ms["zero_paper"] == 1_875_000_000
    # ...plus the documented ZeRO-3 gather working set: two unsharded layers in bf16 (docs/sizing.md, section 2).
    arch = sizing.architecture_for(7_500_000_000)
    working = 2 * arch.layer_parameters * 2
    assert ms["zero3_gather_working_set"] == working == b["weights"] - 2 * 7_500_000_000 // 64
    assert ms["total"] == ms["zero_paper"] + working
    assert data["setup"] == {**data["setup"], "gpus": 64, "tp": 1, "pp": 1, "dp": 64, "zero_stage": 3}
    assert data["architecture"]["parameters"] == 7_500_000_000
    assert any("ZeRO-3 gather working set" in n for n in data["notes"])
    assert "fits" not in data and "training_flops" not in data


def test_zero_paper_example_text_explains_the_1_9_gb() -> None:
    code, out = run("estimate", "--params", "7.5e9", "--gpus", "64", "--zero", "3", "--framework", "zero-paper")
    assert code == 0
    assert "1.875 GB" in out and "1.9 GB" in out
    assert "gather working set 0.81 GB" in out
    assert "25,888,632,496" in out  # the total, as an exact byte count in the table


@pytest.mark.parametrize("stage, paper_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_stages_reproduce_the_paper_figure(stage: int, paper_gb: float) -> None:
    data = estimate(params=7_500_000_000, gpus=64, zero=stage, framework="zero-paper")
    assert round(data["model_states"]["zero_paper"] / GB, 1) == paper_gb
    assert data["model_states"]["zero3_gather_working_set"] == (0 if stage < 3 else
                                                                data["model_states"]["total"] - 1_875_000_000)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_estimate_agrees_with_the_planner(name: str) -> None:
    """Same model and layout as the chosen plan -> the very same per-GPU bytes (one sizing model)."""
    plan = api.plan(EXAMPLES[name])
    m, c = plan.model, plan.compute
    src = m.architecture_source  # "preset <name> (...)", "derived from ...", or an explicit shape
    model = ({"preset": src.split()[1]} if src.startswith("preset ") else
             {"params": m.parameters} if src.startswith("derived") else
             {"layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads, "vocab": m.vocab,
              "ffn_hidden": m.ffn_hidden})
    data = estimate(**model, seq_len=m.sequence_length, micro_batch=m.micro_batch_size, precision=m.precision,
                    optimizer=m.optimizer, zero=c.zero_stage, gpus=c.total_gpus, tp=c.tp, pp=c.pp,
                    recompute=c.recompute, sp=c.sequence_parallel, gpu=c.gpu)
    assert data["architecture"]["parameters"] == m.parameters
    z = plan.sizing
    assert data["per_gpu_bytes"] == {"weights": z.weights, "gradients": z.gradients,
                                     "optimizer_states": z.optimizer_states, "activations": z.activations,
                                     "reserve": z.reserve, "total": z.total}
    assert data["fits"] is True and data["gpu"]["memory_bytes"] == z.gpu_memory
    assert data["gpu"]["headroom_bytes"] == z.headroom


def test_fit_and_compute_against_the_catalog_gpu() -> None:
    data = run_json("estimate", "--preset", "llama-2-70b", "--gpus", "512", "--tp", "8", "--pp", "4",
                    "--gpu", "a100", "--tokens", "2T")
    assert data["setup"]["dp"] == 16
    assert data["fits"] is True
    assert data["gpu"]["name"] == "A100-80G" and data["gpu"]["memory_bytes"] == 80 * GiB
    assert data["training_flops"] == pytest.approx(6 * 69.0e9 * 2e12)
    # docs/sizing.md section 7: model FLOPs with attention and logits (s = 4096, the default) and selective
    # recompute's attention forward, at the efficiency fitted to published runs for h = 8192 split over tp = 8 (~0.45)
    # of 312 TFLOP/s.
    from generator import sizing
    executed = sizing.executed_flops(sizing.PRESETS["llama-2-70b"], 4096, 2 * 10**12, "selective")
    assert executed == pytest.approx((6 * (69.0e9 - 2 * 32000 * 8192) + 6 * 32000 * 8192 + 16 * 80 * 8192 * 4096) * 2e12)
    eff = sizing.compute_efficiency(8192, tp=8)
    assert 0.40 < eff < 0.50 and data["gpu"]["mfu"] == pytest.approx(eff, abs=1e-4)  # rounded in the JSON
    assert data["gpu_hours"] == pytest.approx(executed / (312e12 * eff) / 3600)
    assert data["hours"] == pytest.approx(data["gpu_hours"] / 512)


def test_does_not_fit_says_by_how_much_and_what_to_try() -> None:
    args = ("estimate", "--preset", "llama-2-70b", "--gpus", "128", "--tp", "8", "--pp", "4", "--zero", "0",
            "--recompute", "none", "--no-sp", "--gpu", "A100-80G")
    data = run_json(*args)
    assert data["fits"] is False
    assert data["gpu"]["headroom_bytes"] == 80 * GiB - data["per_gpu_bytes"]["total"] < 0
    code, out = run(*args)
    assert code == 0
    short = (data["per_gpu_bytes"]["total"] - 80 * GiB) / GiB
    assert "Does NOT fit on one A100-80G" in out and f"{short:,.1f} GiB more" in out
    assert "--zero 3" in out and "--recompute full" in out


def test_tokens_without_gpu_gives_flops_only() -> None:
    data = run_json("estimate", "--params", "7B", "--tokens", "1T")
    assert data["training_flops"] == pytest.approx(6 * 7e9 * 1e12)
    assert "gpu_hours" not in data and "fits" not in data


def test_lora_and_qlora() -> None:
    full = estimate(preset="llama-2-70b", gpus=8, tp=8, zero=0)
    lora = estimate(preset="llama-2-70b", gpus=8, tp=8, zero=0, lora_rank=16)
    qlora = estimate(preset="llama-2-70b", gpus=8, tp=8, zero=0, lora_rank=16, qlora=True)
    assert qlora["per_gpu_bytes"]["total"] < lora["per_gpu_bytes"]["total"] < full["per_gpu_bytes"]["total"]
    assert "zero_paper" not in lora["model_states"] and lora["setup"]["finetune"] == "lora"
    assert qlora["setup"]["finetune"] == "qlora"


def test_params_with_a_preset_or_a_shape_is_a_usage_error() -> None:
    # as in a spec, where model.parameters with model.preset is exit 2 (review P2-10)
    with pytest.raises(EstimateError) as e:
        estimate(params=70_000_000_000, preset="llama-2-7b")
    assert (e.value.code, e.value.fields) == (ev.SizedTwice.code, {"by": "preset"})
    with pytest.raises(EstimateError) as e:
        estimate(params=70_000_000_000, layers=4, hidden=512, heads=8)
    assert (e.value.code, e.value.fields) == (ev.SizedTwice.code, {"by": "shape"})
    code, out = run("estimate", "--params", "70B", "--preset", "llama-2-7b")
    assert code == 2 and str(e.value).replace("shape", "preset") in out, out


def test_the_gpu_hours_name_the_flops_they_rest_on() -> None:
    # review P2-10: "6 x N x D = 8.28e+23" sat next to GPU-hours computed from the executed FLOPs
    code, out = run("estimate", "--preset", "llama-2-70b", "--gpus", "128", "--tp", "8", "--pp", "4",
                    "--gpu", "A100-80G", "--tokens", "2T")
    assert code == 0, out
    data = estimate(preset="llama-2-70b", gpus=128, tp=8, pp=4, gpu="A100-80G", tokens=2 * 10**12)
    eff = data["gpu"]["mfu"]  # the efficiency fitted to published runs, on executed FLOPs
    executed = f"{data['executed_flops']:.3g} executed FLOPs / (312 TFLOP/s x {eff:.0%} fitted efficiency on " \
               f"A100-80G) = {data['gpu_hours']:,.0f} GPU-hours"
    assert executed in out, out
    assert data["executed_flops"] / (312e12 * eff) / 3600 == pytest.approx(data["gpu_hours"], rel=1e-3)
    assert data["training_flops"] < data["model_flops"] < data["executed_flops"]


def test_an_unavailable_accelerator_gets_the_sourced_answer() -> None:
    code, out = run("estimate", "--params", "7B", "--gpu", "Ascend-910B")
    assert code == 2, out
    e = refusal("--params", "7B", "--gpu", "Ascend-910B")
    assert e.code == ev.AcceleratorNotOffered.code and e.fields["accelerator"] == "Ascend-910B"
    # the sourced answer of generator/catalog/unavailable.py: who offers it, and the nearest catalog GPUs
    from generator.catalog.unavailable import unavailable_text

    catalog = load_catalog()
    acc = catalog.unavailable_accelerator("Ascend-910B")
    assert acc is not None
    assert (e.fields["answer"], e.fields["nearest"]) == unavailable_text(acc, catalog)
    assert e.fields["answer"] in out


def test_bf16_on_a_gpu_without_bf16_warns() -> None:
    data = estimate(params=7_000_000_000, gpu="V100-32G")
    [w] = [w for w in data["warnings"] if w["code"] == ev.NoBf16.code]
    assert w["fields"] == {"gpu": "V100-32G"} and w["text"] == ev.NoBf16("V100-32G").text()
    assert ev.NoBf16.code not in codes(estimate(params=7_000_000_000, gpu="V100-32G", precision="fp16")["warnings"])
    assert ev.NoBf16.code not in codes(estimate(params=7_000_000_000, gpu="A100-80G")["warnings"])


def test_partial_shape_overrides_the_preset() -> None:
    data = estimate(preset="llama-2-7b", layers=4)
    assert data["architecture"]["layers"] == 4 and data["architecture"]["hidden"] == 4096


@pytest.mark.parametrize("args, code, fields", [
    (("--params", "7.5e9", "--gpus", "60", "--tp", "8"), ev.GpusNotMultiple.code,
     {"gpus": 60, "tp": 8, "pp": 1, "cp": 1, "replica_gpus": 8, "near": (56, 64)}),
    (("--params", "7.5e9", "--gpus", "4", "--tp", "8"), ev.GpusNotMultiple.code, {"near": (8,)}),
    (("--preset", "llama-2-70b", "--tp", "3"), ev.SizingFailed.code, {}),
    (("--layers", "24", "--hidden", "6144", "--heads", "48", "--kv-heads", "6", "--tp", "4"), ev.SizingFailed.code,
     {}),
    (("--preset", "llama-2-7b", "--pp", "33"), ev.SizingFailed.code, {}),
    (("--preset", "llama-2-7b", "--zero", "3", "--framework", "megatron"), ev.SizingFailed.code, {}),
    (("--params", "7B", "--paged-optimizer"), spec_codes.PAGED_OPTIMIZER_MEGATRON.code, {"flag": "--paged-optimizer"}),
    (("--params", "7B", "--gpus", "8", "--zero", "2", "--offload", "optimizer", "--paged-optimizer"),
     spec_codes.PAGED_OPTIMIZER_OFFLOAD.code, {"flag": "--paged-optimizer"}),
    (("--params", "7B", "--qlora"), ev.QloraNeedsRank.code, {}),
    (("--params", "7B", "--lora-rank", "8", "--qlora", "--precision", "fp32"), spec_codes.QLORA_FP32.code, {"flag": "--precision"}),
    (("--params", "7B", "--gpu", "MI300X"), ev.UnknownGpu.code, {"gpu": "MI300X"}),
    (("--preset", "llama-9"), ev.SizingFailed.code, {}),
    ((), ev.NoModelSize.code, {}),
    (("--layers", "4", "--hidden", "512"), ev.PartialShape.code, {}),
    (("--params", "1000"), ev.SizingFailed.code, {}),
    (("--layers", "2", "--hidden", "100", "--heads", "3"), ev.SizingFailed.code, {}),
    (("--params", "7B", "--top-k", "2"), ev.MoeFlagsWithoutExperts.code, {"flags": ("--top-k",)}),
    (("--params", "7B", "--experts", "8"), ev.ExpertsIncomplete.code, {}),
    (("--params", "7B", "--gpu", "A100-80G", "--precision", "fp8"), ev.NoFp8.code, {"gpu": "A100-80G"}),
    (("--params", "7B", "--instance-type", "ecs.nope"), ev.UnknownInstanceType.code, {"instance_type": "ecs.nope"}),
    (("--params", "7B", "--instance-type", "ecs.gn7e-c16g1.32xlarge", "--gpu", "H20"), ev.GpuNotOnInstanceType.code,
     {"gpu": "H20", "type_gpu": "A100-80G"}),
])
def test_bad_input_is_a_coded_sentence_and_exit_2(args: tuple[str, ...], code: str, fields: dict) -> None:
    exit_code, out = run("estimate", *args)
    assert exit_code == 2, out
    assert out.count("\n") <= 3  # a sentence, not a dump
    e = refusal(*args)
    assert e.code == code and {k: e.fields[k] for k in fields} == fields
    assert str(e) in out  # the words are rendered from the fields
    data = json.loads(CliRunner().invoke(main, ["estimate", *args, "--json"]).stdout)  # --json: the refusal as data
    assert data["error"]["code"] == code and data["error"]["text"] == str(e)


def test_a_sizing_refusal_carries_the_sizing_models_message() -> None:
    e = refusal("--preset", "llama-2-7b", "--pp", "33")
    assert e.code == ev.SizingFailed.code and e.fields["message"] == str(e)
    with pytest.raises(EstimateError) as h:  # click bounds --headroom on the command line; the function checks it too
        estimate(params=7_000_000_000, headroom=0.9)
    assert (h.value.code, h.value.fields) == (ev.HeadroomOutOfRange.code, {"headroom": 0.9})


@pytest.mark.parametrize("args", [("--params", "70Q"), ("--zero", "4", "--params", "7B"),
                                  ("--precision", "fp4", "--params", "7B"), ("--gpus", "0", "--params", "7B")])
def test_click_rejects_malformed_flags_with_exit_2(args: tuple[str, ...]) -> None:
    code, out = run("estimate", *args)
    assert code == 2 and "Invalid value" in out


def test_data_parallel_degree() -> None:
    assert data_parallel_degree(None, 8, 4) == 1
    assert data_parallel_degree(128, 8, 4) == 4
    with pytest.raises(EstimateError) as e:
        data_parallel_degree(70, 8, 1)
    assert e.value.code == ev.GpusNotMultiple.code and e.value.fields["near"] == (64, 72)
    with pytest.raises(EstimateError) as e:
        data_parallel_degree(None, 0, 1)
    assert (e.value.code, e.value.fields) == (ev.NotWholeNumber.code, {"option": "--tp", "value": 0})


def test_notes_carry_codes_and_fields() -> None:
    uneven = estimate(preset="deepseek-v3", gpus=2048, pp=16, ep=64, recompute="full")
    [w] = [w for w in uneven["warnings"] if w["code"] == ev.UnevenPipeline.code]
    assert w["fields"] == {"pp": 16, "layers": 61, "middle_layers": 4, "first_layers": 2, "last_layers": 3}
    lora = estimate(preset="llama-2-7b", lora_rank=16, tokens=10**9)
    assert codes(lora["warnings"]) == [ev.ZeroWithoutDataParallel.code, ev.LoraComputeUpperBound.code]
    assert lora["warnings"][0]["fields"] == {"zero_stage": 1}
    h800 = estimate(params=7_000_000_000, gpu="H800")
    assert {"code": ev.GpuNotOffered.code, "fields": {"gpu": "H800"}} in [
        {k: w[k] for k in ("code", "fields")} for w in h800["warnings"]]
    code, out = run("estimate", "--preset", "llama-2-7b", "--lora-rank", "16", "--tokens", "1B")
    assert code == 0 and all(f"  ! {w['text']}" in out for w in lora["warnings"])


def _offloaded(**extra: object) -> dict:
    return estimate(preset="llama-2-70b", gpus=32, zero=3, framework="deepspeed", offload="optimizer",
                    recompute="full", **extra)


def test_the_cpu_step_under_offload_uses_the_instance_types_vcpus_as_the_planner_does() -> None:
    catalog = load_catalog()
    t = catalog.instance("ecs.gn7e-c16g1.32xlarge")
    assert t is not None and t.vcpu > 0
    data = _offloaded(instance_type=t.name, tokens=10**9)
    o = data["offload"]
    assert data["gpu"]["name"] == t.gpu  # the type's GPU, --gpu left out
    shard = sizing.PRESETS["llama-2-70b"].parameters / 32  # tp = pp = cp = 1: Psi/d over the 32 GPUs
    assert o["cpu_step_seconds"] == pytest.approx(sizing.cpu_optimizer_seconds("deepspeed", shard, t.gpus, t.vcpu))
    assert (o["vcpus"], o["vcpus_basis"], o["gpus_per_node"], o["instance_type"]) == (t.vcpu, "instance_type", 8, t.name)
    assert o["pcie_seconds"] == pytest.approx(sizing.pcie_seconds(o["pcie_bytes_per_step"], t.gpu))
    assert o["host_fits"] is sizing.host_fits(o["host_bytes_per_gpu"], t.gpus, t.memory_gib)
    assert o["share_of_compute"] == pytest.approx((o["pcie_seconds"] + o["cpu_step_seconds"]) / o["step_compute_seconds"])
    assert ev.HostCpuAssumed.code not in codes(data["warnings"])
    assert data["gpu_hours"] == _offloaded(gpu=t.gpu, tokens=10**9)["gpu_hours"]  # the hours leave the step out


def test_the_cpu_step_without_an_instance_type_assumes_the_planners_vcpus_and_says_so() -> None:
    from generator.sizing.offload import DEFAULT_VCPUS_PER_GPU

    data = _offloaded()
    o = data["offload"]
    assert (o["vcpus"], o["vcpus_basis"], o["instance_type"], o["host_fits"]) == (
        DEFAULT_VCPUS_PER_GPU * 8, "assumed", None, None)
    [w] = [w for w in data["warnings"] if w["code"] == ev.HostCpuAssumed.code]
    assert w["fields"] == {"vcpus_per_gpu": DEFAULT_VCPUS_PER_GPU, "instance_type": ""}
    assert "step_compute_seconds" not in o  # no GPU: no step time to compare with
    # FSDP steps with PyTorch's CPU Adam, ~5.7x slower than DeepSpeed's CPU-Adam (Ren et al. 2021)
    fsdp = estimate(preset="llama-2-70b", gpus=32, zero=3, framework="fsdp", offload="optimizer+params")
    assert fsdp["offload"]["cpu_optimizer"] == "PyTorch CPU Adam" and o["cpu_optimizer"] == "DeepSpeed CPU-Adam"
    assert fsdp["offload"]["cpu_step_seconds"] / o["cpu_step_seconds"] == pytest.approx(14.76 / 2.57)
    assert estimate(preset="llama-2-70b", gpus=32, zero=3)["offload"] is None


def test_host_memory_short_on_the_instance_type_is_a_note() -> None:
    small = estimate(preset="llama-2-70b", gpus=8, zero=3, framework="deepspeed", offload="optimizer+params",
                     recompute="full", instance_type="ecs.gn7e-c16g1.32xlarge")
    o = small["offload"]
    assert o["host_fits"] is False
    [w] = [w for w in small["warnings"] if w["code"] == ev.HostMemoryShort.code]
    assert w["fields"]["need_bytes"] == o["host_bytes_per_node"] == 8 * o["host_bytes_per_gpu"]


def estimate_code_table() -> str:
    """The estimate's table docs/codes.md must hold, from the classes themselves (as tests/test_codes.py does for
    the plan's)."""
    import dataclasses

    rows = ["| code | flag | event | when | fields |", "|---|---|---|---|---|"]
    for c in ev.codes():
        flag = f"`{c.flag}`" if issubclass(c, ev.EstimateRefusal) and c.flag else "-"
        names = ", ".join(f"`{f.name}`" for f in dataclasses.fields(c)) or "none"  # type: ignore[arg-type]
        rows.append(f"| `{c.code}` | {flag} | `{c.__name__}` | {c.summary} | {names} |")
    return "\n".join(rows) + "\n"


def test_estimate_codes_are_unique_and_listed_in_docs() -> None:
    classes = ev.codes()
    assert len({c.code for c in classes}) == len(classes)
    assert all(c.code.startswith("TSE") and len(c.code) == 6 and c.summary for c in classes)
    expected = estimate_code_table()
    doc = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert expected in doc, f"docs/codes.md: replace the estimate table with\n{expected}"


# ------------------------------------------------------------------------------------------- cost


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_cost_lines_add_up_and_match_the_plan(name: str) -> None:
    catalog = load_catalog()
    plan = api.plan(EXAMPLES[name], catalog)
    data = run_json("cost", str(EXAMPLES[name]))
    assert data == json.loads(json.dumps(cost_report(plan, catalog)))
    lines = {ln["item"]: ln for ln in data["lines"]}
    assert list(lines) == ["compute_on_demand", "compute_spot", "shared_storage", "object_storage"]
    c = plan.cost
    assert lines["compute_on_demand"]["per_hour"] == c.compute_on_demand_per_hour
    assert lines["compute_spot"]["per_hour"] == c.compute_spot_per_hour
    assert lines["shared_storage"]["per_hour"] == c.shared_storage_per_hour
    assert lines["object_storage"]["per_hour"] == c.object_storage_per_hour
    assert sum(ln["per_hour"] for ln in lines.values()) == pytest.approx(c.total_per_hour, abs=0.03)
    hours = c.run_hours + c.expected_rework_hours
    for ln in lines.values():
        assert ln["per_day"] == pytest.approx(ln["per_hour"] * 24, abs=0.01)
        # the planner's figure from unrounded hours (per hour x rounded hours differs by cents to dollars)
        assert ln["run"] == getattr(c, f"{ln['item']}_run")
        assert ln["run"] == pytest.approx(ln["per_hour"] * hours, rel=1e-3, abs=0.005 * hours + 0.01)  # per_hour is rounded
        if ln["per_hour"] > 0:  # every line that costs money names its price, date and source
            p = ln["price"]
            assert p["date"] and p["source"] and p["region"] and isinstance(p["estimated"], bool)
    assert sum(ln["run"] for ln in lines.values()) == pytest.approx(c.run_total, abs=0.03)
    assert data["total"] == {"per_hour": c.total_per_hour, "per_day": c.total_per_day, "run": c.run_total}
    # The planner's own notes name the same catalog rows (keeps the item mapping here in step with it).
    notes = " ".join(c.price_notes).replace("-", "_")
    for ln in lines.values():
        if ln["price"] and ln["item"] != "compute_spot":
            assert ln["price"]["what"].replace("-", "_") in notes
    fitting = [x for x in plan.candidates if x.nodes]
    assert data["chosen"]["instance_type"] == plan.compute.instance_type
    # the chosen type's compute costs the same in the cost table and the runners-up table (P2-11)
    assert data["chosen"]["compute_run"] == pytest.approx(
        lines["compute_on_demand"]["run"] + lines["compute_spot"]["run"], abs=0.02)
    assert len(data["runners_up"]) == len(fitting) - 1
    assert all(r["compute_per_hour"] > 0 and r["verdict"] != "chosen" for r in data["runners_up"])


def test_cost_text_marks_estimates_and_shows_dates_and_sources() -> None:
    code, out = run("cost", str(EXAMPLES["finetune-7b"]))
    assert code == 0
    assert "list price, cn-shanghai, dated 2023-06, source: 3P-PRICE" in out  # ecs.gn7e-c16g1.32xlarge
    assert "ESTIMATE" in out  # OSS Standard is an estimate in catalog v1
    assert "Runners-up" in out and "ecs.ebmgn7e.32xlarge" in out
    plan = api.plan(EXAMPLES["finetune-7b"])
    assert f"whole run = {plan.cost.run_hours:,.1f} h training" in out


def test_cost_of_spot_is_always_an_estimate() -> None:
    data = run_json("cost", str(EXAMPLES["pretrain-70b"]))
    plan = api.plan(EXAMPLES["pretrain-70b"])
    assert plan.spot.enabled and plan.spot.spot_ranks
    spot = next(ln for ln in data["lines"] if ln["item"] == "compute_spot")
    od = next(ln for ln in data["lines"] if ln["item"] == "compute_on_demand")
    assert spot["price"]["estimated"] is True
    assert spot["price"]["value"] == pytest.approx(od["price"]["value"] * 0.5, abs=0.01)
    assert "spot.price_ratio" in spot["price"]["source"]
    assert spot["quantity"] == f"{len(plan.spot.spot_ranks)} x {plan.compute.instance_type}"
    assert od["quantity"] == f"{len(plan.spot.on_demand_ranks)} x {plan.compute.instance_type}"


def _spec(tmp_path: Path, extra: str) -> Path:
    text = (EXAMPLES["finetune-7b"].read_text()) + extra
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_cost_without_tokens_has_no_whole_run(tmp_path: Path) -> None:
    path = _spec(tmp_path, "")
    path.write_text(path.read_text().replace("  tokens: 2B\n", ""))
    data = run_json("cost", str(path))
    assert data["total"]["run"] is None and all(ln["run"] is None for ln in data["lines"])
    code, out = run("cost", str(path))
    assert code == 0 and "whole run: n/a" in out


def test_cost_budget_failure_is_a_spec_error(tmp_path: Path) -> None:
    path = _spec(tmp_path, "budget:\n  per_hour: 10\n")
    code, out = run("cost", str(path))
    assert code == 2
    assert "budget.per_hour" in out and "over the budget of 10.00 CNY/h" in out


def test_cost_of_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    code, out = run("cost", str(tmp_path / "nope.yaml"))
    assert code == 2 and "no such file" in out
