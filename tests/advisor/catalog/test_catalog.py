"""The packaged catalog: every figure sourced and dated, sane values, user overrides win."""

from __future__ import annotations

import pytest

from advisor.catalog import CatalogError, load_catalog, parse_price_flags
from advisor.catalog.models import Hardware, Price, Quote, owned_usd_per_hour
from advisor.catalog.pricing import tier_price
from advisor.hardware.detect import match_hardware

REQUIRED = {"h100-sxm", "h100-pcie", "h200", "a100-80gb", "l4", "l40s", "b200", "mi300x"}


def test_required_gpus_and_some_cpus_present():
    cat = load_catalog()
    assert REQUIRED <= set(cat.hardware)
    assert sum(h.kind == "cpu" for h in cat.hardware.values()) >= 2


def test_every_entry_has_specs_with_a_page_and_every_price_has_quoted_sources():
    cat = load_catalog()
    assert set(cat.policy) == {"cloud_on_demand", "owned_tco"} and all("median" in r for r in cat.policy.values())
    for hw in cat.hardware.values():
        assert hw.spec_source and hw.spec_as_of and hw.memory_gb and hw.memory_bw_gbps, hw.id
        assert hw.spec_url or (hw.spec_from_memory and hw.spec_notes), f"{hw.id}: specs need the page read"
        assert hw.spec_url is None or hw.spec_url.startswith("https://"), hw.id
        if hw.kind == "gpu":
            assert hw.bf16_tflops_dense and hw.tdp_w and hw.interconnect, hw.id
        for p in hw.prices:
            assert p.quotes, (hw.id, p.tier)  # the packaged catalog types no tier price: it lists quotes
            for q in p.quotes:
                assert q.provider and q.listed, (hw.id, q)
                assert q.from_memory or (q.url or "").startswith("https://"), (hw.id, q)
                assert q.as_of is None or q.as_of[:4].isdigit(), (hw.id, q.as_of)  # the source's date, or none
        for dense, sparse in ((hw.bf16_tflops_dense, hw.bf16_tflops_sparse), (hw.fp8_tflops_dense, hw.fp8_tflops_sparse)):
            if dense and sparse:
                assert sparse == pytest.approx(2 * dense, rel=0.02), hw.id  # 2:4 sparsity doubles the dense figure
    for o in cat.hosted:
        assert o.source and o.as_of and o.output_usd_per_1m >= o.input_usd_per_1m
    assert {"own", "llama_cpp", "vllm", "tensorrt_llm"} <= set(cat.engines)


NEW_HARDWARE = {"h100-nvl", "gh200", "gb200", "b300", "mi325x", "mi355x", "gaudi3", "a10g", "rtx-pro-6000",
                "aws-m7g-large"}


def test_the_catalog_lists_the_newer_parts_and_a_graviton_instance():
    cat = load_catalog()
    assert NEW_HARDWARE <= set(cat.hardware)
    assert cat.get("aws-m7g-large").stack == "cpu-arm"  # engines.yaml's cpu-arm claims now have hardware
    assert cat.get("gaudi3").stack == "intel-gpu" and cat.get("mi355x").stack == "rocm"


def _hw(**prices: object) -> Hardware:
    base = load_catalog().get("h100-sxm").model_dump()
    return Hardware(**{**base, "prices": [Price(tier=t, quotes=tuple(Quote(**q) for q in qs))  # type: ignore[arg-type]
                                          for t, qs in prices.items()]})


Q = {"url": "https://example.org/p", "listed": "as listed"}


def test_on_demand_is_the_median_of_one_latest_quote_per_provider_with_node_prices_derived():
    cat = load_catalog()
    hw = _hw(cloud_on_demand=[{**Q, "provider": "A", "as_of": "2026-05-01", "usd_per_hour": 2.0},
                              {**Q, "provider": "a", "as_of": "2026-01-01", "usd_per_hour": 9.0},  # older: replaced
                              {**Q, "provider": "B", "as_of": "2026-04-01", "usd_per_hour": 3.0},
                              {**Q, "provider": "C", "as_of": None, "usd_per_node_hour": 40.0, "devices_per_node": 8},
                              {"provider": "D", "from_memory": True, "listed": "x", "usd_per_hour": 100.0}])
    p = tier_price(hw, "cloud_on_demand", cat.owned)
    assert p is not None and p.usd_per_hour == pytest.approx(3.0)  # median of 2.0, 3.0, 40/8 = 5.0
    assert p.policy_met and not p.from_memory and len(p.quotes) == 3  # D (from memory) and A's older quote left out
    assert "C $5/h (derived: $40 per 8-device node / 8) on an undated page" in p.source
    assert p.as_of == "2026-04-01 to 2026-05-01 (some undated)"
    one = _hw(cloud_on_demand=[{**Q, "provider": "A", "as_of": "2026-05-01", "usd_per_hour": 2.0}])
    p1 = tier_price(one, "cloud_on_demand", cat.owned)
    assert p1 is not None and not p1.policy_met and p1.source.endswith(", only 1 dated citable provider")
    undated = _hw(cloud_on_demand=[{**Q, "provider": "A", "as_of": None, "usd_per_hour": 2.0},
                                   {**Q, "provider": "B", "as_of": "2026-05-01", "usd_per_hour": 4.0}])
    p2 = tier_price(undated, "cloud_on_demand", cat.owned)  # an undated listing counts in the median, not the two
    assert p2 is not None and p2.usd_per_hour == 3.0 and not p2.policy_met


def test_a_price_with_only_quotes_from_memory_is_marked_so():
    cat = load_catalog()
    hw = _hw(cloud_on_demand=[{"provider": "A", "from_memory": True, "listed": "x", "usd_per_hour": 1.0},
                              {"provider": "B", "from_memory": True, "listed": "y", "usd_per_hour": 3.0}])
    p = tier_price(hw, "cloud_on_demand", cat.owned)
    assert p is not None and p.from_memory and p.usd_per_hour == 2.0 and "from memory" in p.source
    assert cat.price("aws-c7i-2xlarge").from_memory and not cat.price("h100-sxm").from_memory
    with pytest.raises(ValueError, match="has no url"):
        Quote(provider="A", listed="x", usd_per_hour=1.0)  # a citable quote names its page
    with pytest.raises(ValueError, match="devices_per_node"):
        Quote(provider="A", url="https://x", listed="x", usd_per_node_hour=8.0)


def test_owned_tco_is_the_median_purchase_price_amortised_plus_power():
    cat = load_catalog()
    p = cat.price("h100-sxm", "owned_tco")
    a = cat.owned
    capex = 30678  # median of the three listed purchase prices (32,500 and 27,500 range midpoints, 30,678)
    expected = capex / (a.amortization_years * 8760) * (1 + a.overhead_fraction) + 0.7 * a.pue * a.power_usd_per_kwh
    assert p is not None and p.usd_per_hour == pytest.approx(expected)
    assert p.usd_per_hour == pytest.approx(owned_usd_per_hour(capex, 700, a))
    assert "amortization" in (p.assumptions or "")
    assert not p.policy_met and p.source.endswith("only 0 dated citable providers, amortised over 4 years plus power "
                                                  "at 700 W")  # the three pages state no date
    gaudi = cat.price("gaudi3", "owned_tco")  # sold only as an 8-accelerator kit: per device derived
    assert gaudi is not None and gaudi.usd_per_hour == pytest.approx(owned_usd_per_hour(125000 / 8, 900, a))
    # CPUs have an owned price of their own now, never the cloud price relabelled
    cpu = cat.price("aws-c7i-2xlarge", "owned_tco")
    assert cpu is not None and cpu.tier == "owned_tco" and cpu.usd_per_hour < cat.price("aws-c7i-2xlarge").usd_per_hour
    assert cat.price("aws-m7g-large", "owned_tco") is None  # rented only: no owned price, no fallback


def test_user_prices_win_file_then_flags(tmp_path):
    f = tmp_path / "prices.yaml"
    f.write_text("prices:\n  h100-sxm: 2.10\n  l4: {usd_per_hour: 0.5, source: our contract}\n")
    cat = load_catalog(f)
    assert cat.price("h100-sxm").usd_per_hour == 2.10 and cat.price("h100-sxm").tier == "user"
    assert cat.price("l4", "owned_tco").source == "our contract"  # a negotiated price wins over every tier
    cat2 = load_catalog(f, parse_price_flags(["h100-sxm=1.5"]))
    assert cat2.price("h100-sxm").usd_per_hour == 1.5


def test_bad_overrides_name_the_fix(tmp_path):
    with pytest.raises(CatalogError, match="not found"):
        load_catalog(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("prices:\n  h999: 1.0\n")
    with pytest.raises(CatalogError, match="unknown hardware 'h999'; known: .*h100-sxm"):
        load_catalog(bad)
    with pytest.raises(CatalogError, match="HARDWARE_ID=USD_PER_HOUR"):
        parse_price_flags(["h100-sxm"])
    with pytest.raises(CatalogError, match="positive"):
        parse_price_flags(["h100-sxm=-1"])


def test_manifest_matching():
    cat = load_catalog()
    assert match_hardware({"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}, cat).id == "h100-sxm"
    assert match_hardware({"gpus": [{"name": "NVIDIA H100 PCIe"}]}, cat).id == "h100-pcie"
    assert match_hardware({"gpus": [{"name": "NVIDIA L4"}]}, cat).id == "l4"
    assert match_hardware({"gpus": [{"name": "NVIDIA L40S"}]}, cat).id == "l40s"
    assert match_hardware({"gpus": [{"name": "Tesla T4"}]}, cat) is None
    assert match_hardware({"gpus": [{"name": "NVIDIA H200"}]}, cat).id == "h200"  # the H200 runs' NVML name
    assert match_hardware({"gpus": [{"name": "NVIDIA H200 NVL"}]}, cat) is None  # not the SXM card it priced as
    assert match_hardware({"gpus": [{"name": "NVIDIA GH200 480GB"}]}, cat).id == "gh200"  # not the H200
    assert match_hardware({"gpus": [{"name": "NVIDIA H100 NVL"}]}, cat).id == "h100-nvl"
    assert match_hardware({"gpus": [{"name": "NVIDIA GB200"}]}, cat).id == "gb200"  # not the B200
    assert match_hardware({"cpu_model": "Xeon", "cpu_cores": 2, "gpus": []}, cat).id == "cpu-2core-vm"
    assert match_hardware({"cpu_model": "Xeon", "cpu_cores": 64, "gpus": []}, cat) is None


def test_detection_gives_an_entry_or_a_measured_custom_one():
    from advisor.hardware.detect import Detected, custom_cpu, detect, measure_memory_bandwidth_gbps

    assert measure_memory_bandwidth_gbps(size_mb=8, repeats=3) > 0
    cat = load_catalog()
    d = detect(cat, measure=False)
    assert d.catalog_id == "custom" or d.catalog_id in cat.hardware
    custom = custom_cpu({"cpu_model": "Weird CPU", "cpu_cores": 3, "mem_gb": 8.0}, bw_gbps=12.5)
    assert custom.id == "custom" and custom.memory_bw_gbps == 12.5 and custom.measured
    # a CPU entry calibrates with this machine's measured bandwidth, not the catalog placeholder
    vm = cat.get("cpu-2core-vm")
    det = Detected("cpu-2core-vm", vm, "test", 23.0, {})
    assert det.calibration_hardware.memory_bw_gbps == 23.0 and vm.memory_bw_gbps != 23.0
    gpu = Detected("l4", cat.get("l4"), "test", 23.0, {})
    assert gpu.calibration_hardware.memory_bw_gbps == 300  # GPUs keep the datasheet figure


@pytest.mark.parametrize("text, message", [
    ("prices: [1]\n", r"p\.yaml: prices must map hardware ids to prices, each a positive number of USD per device-hour"),
    ("prices: {h100-sxm: abc}\n", r"p\.yaml: prices\.h100-sxm is 'abc'; give a positive number of USD per device-hour"),
    ("prices: {h100-sxm: }\n", r"p\.yaml: prices\.h100-sxm is None; give a positive number"),
    ("prices: {h100-sxm: true}\n", r"p\.yaml: prices\.h100-sxm is True; give a positive number"),
    ("prices: {h100-sxm: .nan}\n", r"p\.yaml: prices\.h100-sxm is nan; give a positive number"),
    ("prices: {h100-sxm: .inf}\n", r"p\.yaml: prices\.h100-sxm is inf; give a positive number"),
    ("prices: {h100-sxm: {usd_per_hour: .inf}}\n", r"p\.yaml: prices\.h100-sxm\.usd_per_hour is inf"),
    ("prices: {h100-sxm: {usd_per_hour: -1}}\n", r"p\.yaml: prices\.h100-sxm\.usd_per_hour: .*greater than 0 \(got -1\)"),
    ("hardware: [1]\n", r"p\.yaml: hardware\[0\] is 1; each entry must be a mapping"),
    ("hardware: {a: 1}\n", r"p\.yaml: hardware must be a list of mappings"),
    ("hardware: [{id: x}]\n", r"p\.yaml: hardware\[0\]\.name: Field required"),
    ("hosted: [1]\n", r"p\.yaml: hosted\[0\] is 1; each entry must be a mapping"),
])
def test_a_bad_prices_file_names_the_file_the_key_and_a_valid_value(tmp_path, text, message):
    # these reached the generic handler as AttributeError / TypeError, or passed inf on as a price
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(CatalogError, match=message) as e:
        load_catalog(f)
    assert "\n" not in str(e.value)


def test_a_prices_folder_is_said_to_be_a_folder(tmp_path):
    with pytest.raises(CatalogError, match="is a folder; pass a YAML file to --prices"):
        load_catalog(tmp_path)


@pytest.mark.parametrize("flag", ["h100-sxm=nan", "h100-sxm=inf", "h100-sxm=-inf", "=2"])
def test_a_price_flag_must_be_a_finite_positive_price(flag):
    with pytest.raises(CatalogError, match="HARDWARE_ID=USD_PER_HOUR with a positive, finite price"):
        parse_price_flags([flag])
