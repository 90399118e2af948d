"""``fleetlab plan buy-vs-rent``: owning GPU servers against renting them, from a run or a utilisation.

A thin wrapper: parses the flags, calls ``fleetlab.cost.tco`` and renders; registered on ``plan_app`` by
``fleetlab.cli.cost_plan``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, fail, finite_float, out_console, output_format


def _default_help(rate: str, label: str) -> str:
    """Option help naming the shipped default (data/plan/tco_defaults.json), so --help shows it."""
    from rich.markup import escape

    from fleetlab.cost.tco_defaults import default_rates

    return escape(f"{label} [default: {default_rates()[rate]['value']}]")


def buy_vs_rent_cmd(
    from_run: Annotated[
        Path | None, typer.Option("--from-run", help="Run folder of `fleetlab simulate --out`.")
    ] = None,
    utilisation: Annotated[
        float | None,
        typer.Option("--utilisation", callback=finite_float, min=0.0, max=1.0, help="GPU utilisation 0..1."),
    ] = None,
    percentile: Annotated[
        float,
        typer.Option(
            "--percentile",
            callback=finite_float,
            min=0.0,
            max=100.0,
            help="Demand percentile to own (hybrid).",
        ),
    ] = 50.0,
    cloud_price: Annotated[
        float | None,
        typer.Option(
            "--cloud-price", callback=finite_float, min=0.0, help="Rented USD per GPU-hour (else catalog)."
        ),
    ] = None,
    cloud: Annotated[str | None, typer.Option("--cloud", help="Catalog of the rented instance.")] = None,
    instance: Annotated[str | None, typer.Option("--instance", help="Rented instance type.")] = None,
    region: Annotated[str | None, typer.Option("--region", help="Region of the rented instance.")] = None,
    capacity: Annotated[str | None, typer.Option("--capacity", help="on-demand or spot.")] = None,
    server_price: Annotated[
        float | None,
        typer.Option(
            "--server-price",
            callback=finite_float,
            min=0.0,
            help=_default_help("server_price_usd", "Owned server price, USD"),
        ),
    ] = None,
    gpus_per_server: Annotated[
        int | None,
        typer.Option(
            "--gpus-per-server", min=1, help=_default_help("gpus_per_server", "GPUs per owned server")
        ),
    ] = None,
    life_years: Annotated[
        float | None,
        typer.Option(
            "--life-years",
            callback=finite_float,
            min=0.1,
            help=_default_help("life_years", "Depreciation years"),
        ),
    ] = None,
    power_kw: Annotated[
        float | None,
        typer.Option(
            "--power-kw", callback=finite_float, min=0.0, help=_default_help("power_kw", "Average draw, kW")
        ),
    ] = None,
    provisioned_kw: Annotated[
        float | None,
        typer.Option(
            "--provisioned-kw",
            callback=finite_float,
            min=0.0,
            help=_default_help("provisioned_kw", "Provisioned kW"),
        ),
    ] = None,
    pue: Annotated[
        float | None, typer.Option("--pue", callback=finite_float, min=1.0, help=_default_help("pue", "PUE"))
    ] = None,
    usd_per_kwh: Annotated[
        float | None,
        typer.Option(
            "--usd-per-kwh", callback=finite_float, min=0.0, help=_default_help("usd_per_kwh", "USD per kWh")
        ),
    ] = None,
    colo: Annotated[
        float | None,
        typer.Option(
            "--colo-usd-per-kw-month",
            callback=finite_float,
            min=0.0,
            help=_default_help("colo_usd_per_kw_month", "Colocation"),
        ),
    ] = None,
    network: Annotated[
        float | None,
        typer.Option(
            "--network-usd-per-year",
            callback=finite_float,
            min=0.0,
            help=_default_help("network_usd_per_year", "Network, USD/year"),
        ),
    ] = None,
    maintenance_pct: Annotated[
        float | None,
        typer.Option(
            "--maintenance-pct",
            callback=finite_float,
            min=0.0,
            help=_default_help("maintenance_pct", "Maintenance, % capex/yr"),
        ),
    ] = None,
    staff: Annotated[
        float | None,
        typer.Option(
            "--staff-usd-per-year",
            callback=finite_float,
            min=0.0,
            help=_default_help("staff_usd_per_year", "Staff, USD/year"),
        ),
    ] = None,
    downtime_pct: Annotated[
        float | None,
        typer.Option(
            "--downtime-pct",
            callback=finite_float,
            min=0.0,
            max=99.0,
            help=_default_help("downtime_pct", "Downtime, %"),
        ),
    ] = None,
    fabric_pct: Annotated[
        float | None,
        typer.Option(
            "--fabric-pct",
            callback=finite_float,
            min=0.0,
            help=_default_help("fabric_pct", "Fabric, % of server"),
        ),
    ] = None,
    residual_pct: Annotated[
        float | None,
        typer.Option(
            "--residual-pct",
            callback=finite_float,
            min=0.0,
            max=100.0,
            help=_default_help("residual_pct", "Resale value, %"),
        ),
    ] = None,
    egress: Annotated[
        float | None,
        typer.Option(
            "--egress-usd-per-gb",
            callback=finite_float,
            min=0.0,
            help=_default_help("egress_usd_per_gb", "Egress USD/GB"),
        ),
    ] = None,
    transfer: Annotated[
        float | None,
        typer.Option(
            "--transfer-gb-per-gpu-hour",
            callback=finite_float,
            min=0.0,
            help=_default_help("transfer_gb_per_gpu_hour", "GB moved per rented GPU-h"),
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """On-prem TCO vs renting at a measured utilisation: break-even utilisation and a hybrid plan."""
    from fleetlab.cost.tco import (
        DemandCurve,
        break_even_utilisation,
        cloud_gpu_hour_price,
        default_server,
        hybrid_option,
        rental_options,
        tco_inputs,
    )
    from fleetlab.cost.tco_defaults import default_rates
    from fleetlab.report.plan_report import print_buy_vs_rent
    from fleetlab.spec.catalog import builtin_catalog
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.run_dir import read_demand_curve, read_run_summary, summary_number

    rates = default_rates()
    overrides = dict(
        server_price_usd=server_price, gpus_per_server=gpus_per_server, life_years=life_years,
        power_kw=power_kw, provisioned_kw=provisioned_kw, pue=pue, usd_per_kwh=usd_per_kwh,
        colo_usd_per_kw_month=colo, network_usd_per_year=network, maintenance_pct=maintenance_pct,
        staff_usd_per_year=staff, downtime_pct=downtime_pct, fabric_pct=fabric_pct, residual_pct=residual_pct,
    )  # fmt: skip
    server = default_server(**overrides)
    given = {k for k, v in overrides.items() if v is not None}
    rented = {
        "cloud": cloud or rates["cloud"]["value"],
        "instance_type": instance or rates["instance_type"]["value"],
        "region": region or rates["region"]["value"],
        "capacity_type": capacity or rates["capacity_type"]["value"],
    }
    curve = None
    measured: dict[str, float] = {}
    try:
        if cloud_price is None:
            if rented["capacity_type"] not in ("on-demand", "spot"):
                raise fail(f"--capacity {rented['capacity_type']}: allowed: on-demand, spot")
            try:
                price = cloud_gpu_hour_price(
                    builtin_catalog(rented["cloud"]),
                    rented["instance_type"],
                    rented["region"],
                    rented["capacity_type"],
                )
            except ValueError as exc:
                raise fail(f"--instance/--region: {exc}") from None
        else:
            price = cloud_price
            rented = {"cloud": "given", "instance_type": "--cloud-price", "region": "", "capacity_type": ""}
        if price <= 0:
            raise fail("--cloud-price: must be > 0 USD per GPU-hour")
        modes = (
            {"given": price}
            if cloud_price is not None
            else _rental_modes(builtin_catalog(rented["cloud"]), rented["instance_type"], rented["region"])
        )
        if from_run is not None:
            summary = read_run_summary(from_run)
            source = str(from_run / "summary.json")
            measured["gpu_allocation_ratio"] = summary_number(summary, "gpu_allocation_ratio", source)
            billed = summary_number(summary, "gpu_hours_billed", source)
            busy = summary_number(summary, "gpu_hours_busy", source)
            measured["gpu_busy_ratio"] = busy / billed if billed > 0 else 0.0
            t, gpus = read_demand_curve(from_run)
            end = max(summary_number(summary, "makespan_s", source), float(t[-1]))
            curve = DemandCurve(t_s=t, gpus=gpus, end_s=end)
    except SpecError as exc:
        raise fail(str(exc)) from None
    used_source = "given"
    if utilisation is None:
        if "gpu_allocation_ratio" not in measured:
            raise fail("give --from-run DIR (a `fleetlab simulate --out` folder) or --utilisation 0..1")
        utilisation = measured["gpu_allocation_ratio"]
        used_source = f"GPU allocation ratio of {from_run}"
    egress_rate = egress if egress is not None else float(rates["egress_usd_per_gb"]["value"])
    per_hour = transfer if transfer is not None else float(rates["transfer_gb_per_gpu_hour"]["value"])
    hybrid = []
    if curve is not None:
        levels = sorted({0.0, 25.0, 50.0, 75.0, 90.0, 100.0, percentile})
        hybrid = [hybrid_option(curve, q, server, price, egress_rate, per_hour) for q in levels]
    result = {
        "inputs": tco_inputs(server, rates, given, utilisation, used_source),
        "rental_options": rental_options(server, modes, utilisation),
        "owned_server": {**server.__dict__, "capex_usd": server.capex},
        "yearly_usd": server.yearly(),
        "rented": {**rented, "usd_per_gpu_hour": price},
        "utilisation": utilisation,
        "measured": measured,
        "owned_usd_per_used_gpu_hour": server.cost_per_used_gpu_hour(utilisation),
        "break_even_utilisation": break_even_utilisation(server, price),
        "hybrid": [h.as_dict() for h in hybrid],
        "chosen_percentile": percentile,
        "egress_usd_per_gb": egress_rate,
        "transfer_gb_per_gpu_hour": per_hour,
    }
    if not emit(output_format(json_out, output), result):
        print_buy_vs_rent(out_console, result, hybrid)


def _rental_modes(catalog: Any, instance: str, region: str) -> dict[str, float]:
    """USD per GPU-hour of the rented instance on-demand, committed (1 and 3 years, at the billing
    rules' discounts) and spot, from the catalog; a mode the catalog lacks is left out."""
    from fleetlab.cost.tco import cloud_gpu_hour_price
    from fleetlab.model.billing_rules import COMMITTED_DISCOUNT

    out: dict[str, float] = {}
    for mode in ("on-demand", "spot"):
        try:
            out[mode] = cloud_gpu_hour_price(catalog, instance, region, mode)
        except ValueError:
            continue
    if "on-demand" in out:
        for term, discount in COMMITTED_DISCOUNT.items():
            out[f"committed {term}"] = round(out["on-demand"] * (1.0 - discount), 6)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
