"""A real-size RVTools 4.x export, generated: the SHAPE of a real one, none of its data.

No real export with measured CPU readiness and a licence that allows redistribution was found in public repositories
(see docs/howto/check-cpu-ready.md, "A real-size run"). This writes a workbook with the shape issue 31 reports for a
real RVTools 4.6.1.3 export, so the reader and the plan's CPU Ready check run at that size in the test suite:

* 1,084 powered-on VMs on 35 hosts (the issue's figures), plus powered-off VMs and templates as real exports carry;
* the vInfo columns in the documented 4.x order (every one of ``DOCUMENTED_VINFO``'s 4.x names, MiB units),
  'Overall Cpu Readiness' a number in % (vSphere's VM readiness, averaged over the vCPUs), vCPU 'Overall' MHz,
  vMemory 'Active' MiB, vHost 'CPU usage %' whole numbers that pass 100 on hosts running at turbo (113 % in the
  issue's export), memory in MiB, booleans as True/False;
* vSphere's number formats as RVTools writes them in xlsx: numbers as numbers, dates as text.

Every figure in it is drawn from a seeded generator by the rules below, marked (E): estimates, not measurements.
The measured readiness is drawn independently of densim's model (log-normal per VM, scaled by its host's vCPU per
core ratio), so the comparison on this file checks the pipeline at real size and pins its figures; it is not a
validation of the model. Run ``python -m tests.planning.rvtools_realsize OUT.xlsx`` to write the file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

N_VMS, N_HOSTS = 1084, 35  # issue 31's real RVTools 4.6.1.3 export
N_OFF, N_TEMPLATES = 61, 23  # (E) powered-off VMs and templates, skipped by the reader

VINFO = ["VM", "Powerstate", "Template", "SRM Placeholder", "Config status", "DNS Name", "Connection state", "Guest state",
         "Heartbeat", "Consolidation Needed", "PowerOn", "Suspended To Memory", "Suspend time", "Suspend Interval",
         "Creation date", "Change Version", "CPUs", "Overall Cpu Readiness", "Memory", "Active Memory", "NICs", "Disks",
         "Total disk capacity MiB", "Fixed Passthru HotPlug", "min Required EVC Mode Key", "Latency Sensitivity",
         "Op Notification Timeout", "EnableUUID", "CBT", "Primary IP Address", "Network #1", "Network #2", "Network #3",
         "Network #4", "Network #5", "Network #6", "Network #7", "Network #8", "Num Monitors", "Video Ram KiB",
         "Resource pool", "Folder ID", "Folder", "vApp", "DAS protection", "FT State", "FT Role", "FT Latency",
         "FT Bandwidth", "FT Sec. Latency", "Vm Failover In Progress", "Provisioned MiB", "In Use MiB", "Unshared MiB",
         "HA Restart Priority", "HA Isolation Response", "HA VM Monitoring", "Cluster rule(s)", "Cluster rule name(s)",
         "Boot Required", "Boot delay", "Boot retry delay", "Boot retry enabled", "Boot BIOS setup", "Reboot PowerOff",
         "EFI Secure boot", "Firmware", "HW version", "HW upgrade status", "HW upgrade policy", "HW target", "Path",
         "Log directory", "Snapshot directory", "Suspend directory", "Annotation", "Backup status",
         "ClusterInvariantVMMId", "Last backup", "Datacenter", "Cluster", "Host", "OS according to the configuration file",
         "OS according to the VMware Tools", "Customization Info", "Guest Detailed Data", "VM ID", "SMBIOS UUID",
         "VM UUID", "VI SDK Server type", "VI SDK API Version", "VI SDK Server", "VI SDK UUID"]
VCPU = ["VM", "Powerstate", "Template", "SRM Placeholder", "CPUs", "Sockets", "Cores p/s", "Max", "Overall", "Level",
        "Shares", "Reservation", "Entitlement", "DRS Entitlement", "Limit", "Hot Add", "Hot Remove", "Annotation",
        "Datacenter", "Cluster", "Host", "OS according to the configuration file", "VM ID", "VM UUID", "VI SDK Server"]
VMEM = ["VM", "Powerstate", "Template", "SRM Placeholder", "Size MiB", "Memory Reservation Locked To Max", "Overhead",
        "Max", "Consumed", "Consumed Overhead", "Private", "Shared", "Swapped", "Ballooned", "Active", "Entitlement",
        "DRS Entitlement", "Level", "Shares", "Reservation", "Limit", "Hot Add", "Annotation", "Datacenter", "Cluster",
        "Host", "VM ID", "VM UUID", "VI SDK Server"]
VHOST = ["Host", "Datacenter", "Cluster", "Config status", "Compliance Check State", "in Maintenance Mode",
         "in Quarantine Mode", "vSAN Fault Domain Name", "CPU Model", "Speed", "HT Available", "HT Active", "# CPU",
         "Cores per CPU", "# Cores", "CPU usage %", "# Memory", "Memory Tiering Type", "Memory usage %", "Console",
         "# NICs", "# HBAs", "# VMs total", "# VMs", "VMs per Core", "# vCPUs", "vCPUs per Core", "vRAM",
         "VM Used memory", "VM Memory Swapped", "VM Memory Ballooned", "VMotion support", "Storage VMotion support",
         "Current EVC", "Max EVC", "ESX Version", "Vendor", "Model", "Serial number", "Service tag", "OEM specific string",
         "BIOS Vendor", "BIOS Version", "BIOS Date", "Boot time", "DNS Servers", "DHCP", "Domain", "NTP Server(s)",
         "NTPD running", "Time Zone", "Object ID", "UUID", "VI SDK Server", "VI SDK UUID"]

# (E) two host generations, as a cluster refreshed once: 20 of Xeon Gold 6248 (2 x 20 cores, 2.5 GHz base, 768 GiB)
# and 15 of Xeon Gold 6148 (2 x 20 cores, 2.4 GHz, 512 GiB)
HOSTS = [("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 2500, 20, 786432, "PowerEdge R640")] * 20 + \
        [("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 2400, 20, 524288, "PowerEdge R640")] * 15


def tables(seed: int = 31) -> dict[str, tuple[list, list]]:
    """The four tabs (header, rows). Rules, all (E): vCPUs 1/2/4/8/16 with weights 15/45/28/10/2 %; memory 2, 4 or
    8 GiB per vCPU; a VM's host drawn at random with weight = the host's cores (what DRS roughly evens out); CPU use a
    Beta(1.2, 6) fraction of vCPUs x the host's clock (mean 17 %), a fifth of VMs near idle (Beta(1, 40));
    active memory a Beta(2, 5) share of the configured; measured readiness per vCPU log-normal with median
    0.15 % x (the host's vCPUs per core / 2) and sigma 1.2, rounded to 2 decimals as vSphere reports it."""
    rng = np.random.default_rng(seed)
    n = N_VMS + N_OFF + N_TEMPLATES
    vcpus = rng.choice([1, 2, 4, 8, 16], size=n, p=[0.15, 0.45, 0.28, 0.10, 0.02])
    mem_mib = vcpus * rng.choice([2048, 4096, 8192], size=n, p=[0.3, 0.5, 0.2])
    cores = np.array([2 * h[2] for h in HOSTS])
    host = rng.choice(N_HOSTS, size=n, p=cores / cores.sum())
    speed = np.array([h[1] for h in HOSTS])[host]
    u = np.where(rng.random(n) < 0.2, rng.beta(1.0, 40.0, n), rng.beta(1.2, 6.0, n))
    overall = np.rint(u * vcpus * speed).astype(int)
    active = np.rint(mem_mib * rng.beta(2.0, 5.0, n)).astype(int)
    on = np.arange(n) < N_VMS
    template = np.arange(n) >= N_VMS + N_OFF
    host_vcpus = np.bincount(host[on], weights=vcpus[on], minlength=N_HOSTS)
    ratio = host_vcpus / cores
    ready = np.round(0.15 * ratio[host] / 2.0 * rng.lognormal(0.0, 1.2, n), 2)
    ready = np.where(on, np.minimum(ready, 100.0), 0.0)
    overall = np.where(on, overall, 0)
    hname = [f"esx{i + 1:02d}.dc1.example.test" for i in range(N_HOSTS)]
    clusters = ["CL-GOLD6248" if i < 20 else "CL-GOLD6148" for i in range(N_HOSTS)]
    vinfo, vcpu, vmem = [], [], []
    for i in range(n):
        name = f"{['app', 'web', 'db', 'srv', 'tst'][i % 5]}{i + 1:04d}"
        ps = "poweredOn" if on[i] else "poweredOff"
        h = int(host[i])
        tmpl = bool(template[i])
        row = dict.fromkeys(VINFO, "")
        row.update({"VM": name, "Powerstate": ps, "Template": tmpl, "SRM Placeholder": False, "Config status": "green",
                    "DNS Name": f"{name}.corp.example.test" if on[i] else "", "Connection state": "connected",
                    "Guest state": "running" if on[i] else "notRunning", "Heartbeat": "green" if on[i] else "gray",
                    "Consolidation Needed": False, "Suspended To Memory": False, "Suspend Interval": 0,
                    "Creation date": "2021/03/04 10:11:12", "Change Version": "2024-05-20T07:15:31.123456Z",
                    "CPUs": int(vcpus[i]), "Overall Cpu Readiness": float(ready[i]), "Memory": int(mem_mib[i]),
                    "Active Memory": int(active[i]) if on[i] else 0, "NICs": 1, "Disks": 2,
                    "Total disk capacity MiB": 102400, "Fixed Passthru HotPlug": False, "Latency Sensitivity": "normal",
                    "EnableUUID": True, "CBT": True, "Network #1": f"PG-VLAN{100 + i % 12}", "Num Monitors": 1,
                    "Video Ram KiB": 8192, "Resource pool": "Resources", "Folder": f"/DC1/vm/{name[:3]}",
                    "DAS protection": True, "FT State": "notConfigured", "Provisioned MiB": 104857,
                    "In Use MiB": 61440, "Unshared MiB": 61440, "HA Restart Priority": "clusterRestartPriority",
                    "Firmware": "efi", "HW version": "vmx-19", "Path": f"[DS{h % 8:02d}] {name}/{name}.vmx",
                    "Datacenter": "DC1", "Cluster": clusters[h], "Host": hname[h],
                    "OS according to the configuration file": "Microsoft Windows Server 2019 (64-bit)",
                    "VM ID": f"vm-{1000 + i}", "VI SDK Server type": "VMware vCenter Server",
                    "VI SDK API Version": "8.0.2.0", "VI SDK Server": "vcenter01.corp.example.test"})
        vinfo.append([row[k] for k in VINFO])
        if tmpl:
            continue
        cap = int(vcpus[i] * speed[i])
        vcpu.append([name, ps, False, False, int(vcpus[i]), 1, int(vcpus[i]), cap, int(overall[i]), "normal",
                     1000 * int(vcpus[i]), 0, int(overall[i]), int(overall[i]), -1, False, False, "", "DC1", clusters[h],
                     hname[h], "", f"vm-{1000 + i}", "", "vcenter01.corp.example.test"])
        vmem.append([name, ps, False, False, int(mem_mib[i]), False, 60, int(mem_mib[i]), int(active[i]) + 300, 60,
                     int(active[i]), 0, 0, 0, int(active[i]) if on[i] else 0, int(mem_mib[i]), int(mem_mib[i]), "normal",
                     10 * int(mem_mib[i]), 0, -1, False, "", "DC1", clusters[h], hname[h], f"vm-{1000 + i}", "",
                     "vcenter01.corp.example.test"])
    vhost = []
    used_mhz = np.bincount(host[on], weights=overall[on], minlength=N_HOSTS)
    for j, (model, mhz, cpc, mem, box) in enumerate(HOSTS):
        c = 2 * cpc
        # vSphere's figure from the VMs' MHz; the 28th host (row 29, as in the issue's export) at 113 %: turbo
        usage = 113 if j == 27 else int(round(100.0 * used_mhz[j] / (c * mhz)))
        row = dict.fromkeys(VHOST, "")
        row.update({"Host": hname[j], "Datacenter": "DC1", "Cluster": clusters[j], "Config status": "green",
                    "in Maintenance Mode": False, "in Quarantine Mode": False, "CPU Model": model, "Speed": mhz,
                    "HT Available": True, "HT Active": True, "# CPU": 2, "Cores per CPU": cpc, "# Cores": c,
                    "CPU usage %": usage, "# Memory": mem, "Memory usage %": 55, "# NICs": 4, "# HBAs": 2,
                    "# VMs": int((host[on] == j).sum()), "# vCPUs": int(host_vcpus[j]),
                    "vCPUs per Core": round(float(ratio[j]), 2), "ESX Version": "VMware ESXi 8.0.2 build-22380479",
                    "Vendor": "Dell Inc.", "Model": box, "VI SDK Server": "vcenter01.corp.example.test"})
        vhost.append([row[k] for k in VHOST])
    return {"vInfo": (VINFO, vinfo), "vCPU": (VCPU, vcpu), "vMemory": (VMEM, vmem), "vHost": (VHOST, vhost)}


def write(path: Path, seed: int = 31) -> Path:
    from tests.planning.fixtures import save_tables_xlsx

    return save_tables_xlsx(path, tables(seed), write_only=True)


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
