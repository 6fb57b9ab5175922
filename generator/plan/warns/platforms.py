"""The warnings of one platform's plan parts (Lingjun, PAI-DLC) and of spec fields a platform ignores."""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.warns.base import PlanWarning

# -- Lingjun (generator/platforms/lingjun/plan.py)


@dataclass(frozen=True, slots=True)
class SubscriptionPrepaid(PlanWarning):
    code = "TSW025"
    summary = "Subscription nodes are prepaid for the whole period, whatever the run's length"
    nodes: int
    machine_type: str
    months: int
    amount_cny: float

    def text(self) -> str:
        return (
            f"Subscription nodes are prepaid: {self.nodes} x {self.machine_type} for {self.months} month(s) is "
            f"about {self.amount_cny:,.0f} CNY at the estimated rate, whatever the run's length (the plan's "
            "whole-run cost and budget.total count this amount)"
        )


@dataclass(frozen=True, slots=True)
class SubscriptionNotDestroyed(PlanWarning):
    code = "TSW026"
    summary = "Pulumi never releases Subscription nodes"

    def text(self) -> str:
        return (
            "Subscription nodes are never destroyed by Pulumi: `pulumi destroy` or removing a node only drops it "
            "from the state; release or refund it in the Lingjun console"
        )


@dataclass(frozen=True, slots=True)
class LingjunStock(PlanWarning):
    code = "TSW027"
    summary = "Lingjun capacity is ordered: confirm stock before deploying"
    nodes: int
    machine_type: str
    zone: str
    hpn_zone: str

    def text(self) -> str:
        return (
            f"Lingjun capacity is ordered, not on demand: confirm stock of {self.nodes} x {self.machine_type} in "
            f"{self.zone} (HPN zone {self.hpn_zone}) with Alibaba Cloud before deploying; otherwise the order "
            "fails with 'Failure to check order before create instance'"
        )


@dataclass(frozen=True, slots=True)
class LingjunGpusUndocumented(PlanWarning):
    code = "TSW028"
    summary = "the Lingjun machine type's GPUs are not documented; the plan assumes the catalog's"
    machine_type: str
    gpus: int
    gpu: str

    def text(self) -> str:
        return (
            f"the GPUs of {self.machine_type} are not documented: the plan assumes {self.gpus} x {self.gpu} "
            "(see the catalog notes); confirm the configuration with Alibaba Cloud"
        )


@dataclass(frozen=True, slots=True)
class LingjunNoOssCredentials(PlanWarning):
    code = "TSW029"
    summary = "Lingjun nodes get no OSS credentials: install an AccessKey of the checkpoint RAM user"
    ram_user: str

    def text(self) -> str:
        return (
            f"Lingjun nodes get no OSS credentials from trainstack: create an AccessKey for the RAM user "
            f"{self.ram_user} and install it on every node before training writes checkpoints"
        )


# -- PAI-DLC (generator/platforms/dlc/plan.py)


@dataclass(frozen=True, slots=True)
class DlcQuota(PlanWarning):
    code = "TSW030"
    summary = "the job needs more GPUs or CPU cores than DLC's default public-resource quota per job"
    workers: int
    gpus: int  # per worker
    vcpus: int  # per worker
    max_gpus: int  # the default quota per job
    max_cpus: int

    @property
    def over(self) -> tuple[str, ...]:
        """What the job exceeds: "GPUs", "CPU cores" or both."""
        return tuple(
            what
            for what, bad in (
                ("GPUs", self.workers * self.gpus > self.max_gpus),
                ("CPU cores", self.workers * self.vcpus > self.max_cpus),
            )
            if bad
        )

    def text(self) -> str:
        job_gpus, job_cpus = self.workers * self.gpus, self.workers * self.vcpus
        return (
            f"DLC public resources allow at most {self.max_gpus} GPUs and {self.max_cpus} CPU cores per job "
            f"unless your business manager raises the limit [DOC-DLC-JOB]; this job needs {self.workers} x "
            f"{self.gpus} = {job_gpus} GPU(s) and {self.workers} x {self.vcpus} = {job_cpus} vCPU(s), over the "
            f"default in {' and '.join(self.over)}: ask for the raise (or buy a resource quota) before submitting"
        )


@dataclass(frozen=True, slots=True)
class DlcActivation(PlanWarning):
    code = "TSW031"
    summary = (
        "PAI-DLC must be activated and authorized in the region; its service role reads the OSS datasets"
    )
    region: str
    buckets: tuple[str, ...]  # the read-only OSS datasets' buckets the service role must read

    def text(self) -> str:
        return (
            f"PAI-DLC must be activated and authorized in {self.region} (the AliyunPAIDLCDefaultRole service "
            "role) before the first job"
            + (
                f"; that role, not the job's, mounts the read-only OSS datasets, so it must be able to read "
                f"bucket(s) {', '.join(self.buckets)}"
                if self.buckets
                else ""
            )
            + "; DLC's stock of the worker type is not checked by trainstack"
        )


# -- spec fields a platform ignores (generator/platforms/registry.py)


@dataclass(frozen=True, slots=True)
class FieldIgnored(PlanWarning):
    code = "TSW032"
    summary = "the spec sets a field its platform ignores (docs/platforms.md's table, or a platform rule)"
    path: str  # the dotted spec field
    platform: str  # the platform's title
    why: str  # the platform's declaration (generator/platforms/*: Unhonoured.why)
    hint: str

    def text(self) -> str:
        return f"{self.path} is ignored on {self.platform}: {self.why}" + (
            f" ({self.hint})" if self.hint else ""
        )
