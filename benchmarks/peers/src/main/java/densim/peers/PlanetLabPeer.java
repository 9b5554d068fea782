package densim.peers;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import ch.qos.logback.classic.Level;

import org.cloudsimplus.allocationpolicies.VmAllocationPolicyFirstFit;
import org.cloudsimplus.brokers.DatacenterBroker;
import org.cloudsimplus.brokers.DatacenterBrokerSimple;
import org.cloudsimplus.cloudlets.Cloudlet;
import org.cloudsimplus.cloudlets.CloudletSimple;
import org.cloudsimplus.core.CloudSimPlus;
import org.cloudsimplus.datacenters.DatacenterSimple;
import org.cloudsimplus.hosts.Host;
import org.cloudsimplus.hosts.HostSimple;
import org.cloudsimplus.power.models.PowerModelHostSimple;
import org.cloudsimplus.resources.Pe;
import org.cloudsimplus.resources.PeSimple;
import org.cloudsimplus.schedulers.cloudlet.CloudletSchedulerTimeShared;
import org.cloudsimplus.schedulers.vm.VmSchedulerTimeShared;
import org.cloudsimplus.util.Log;
import org.cloudsimplus.utilizationmodels.UtilizationModelDynamic;
import org.cloudsimplus.utilizationmodels.UtilizationModelPlanetLab;
import org.cloudsimplus.vms.Vm;
import org.cloudsimplus.vms.VmSimple;

/**
 * The CloudSim Plus side of densim's peer benchmark.
 *
 * <p>Workload (the same as densim's side): the PlanetLab CoMon day 2011-03-03 (1,052 files, one CPU %
 * per 300 s line); hosts of 32 PEs at 1,000 MIPS, 128 GiB, linear power 100 W idle to 250 W peak;
 * VMs of 2 PEs at 1,000 MIPS and 2 GiB, VM i driven by trace file (i mod 1,052) in sorted
 * file-name order through one cloudlet with a PlanetLab utilisation model; first-fit placement;
 * 300 s scheduling interval; 24 h.</p>
 *
 * <p>Energy is integrated from the hosts' CPU utilisation at every clock tick (power of the
 * utilisation allocated at a tick, held until the next tick), the same rectangle rule densim uses
 * per step. CloudSim Plus's own idiom (power of the mean of the host's utilisation samples x
 * time) is printed next to it.</p>
 *
 * <p>Usage: {@code java -cp target/cloudsimplus-peer-1.0.jar:target/lib/* densim.peers.PlanetLabPeer
 * TRACE_DIR HOSTS VMS [HOURS]}. Prints one JSON line.</p>
 */
public final class PlanetLabPeer {
    private static final int HOST_PES = 32;
    private static final double PE_MIPS = 1000;
    private static final long HOST_RAM_MB = 128 * 1024;
    private static final int VM_PES = 2;
    private static final long VM_RAM_MB = 2 * 1024;
    private static final double IDLE_W = 100;
    private static final double PEAK_W = 250;
    private static final double STEP_S = 300;

    private double[] hostEnergyJ;
    private double[] hostLastUtil;
    private double lastTick;
    private int maxHostsWithVms;
    private int maxPlacedVms;
    private long ticks;

    public static void main(final String[] args) throws IOException {
        if (args.length < 3) {
            System.err.println("usage: PlanetLabPeer TRACE_DIR HOSTS VMS [HOURS]");
            System.exit(2);
        }
        final Path dir = Path.of(args[0]);
        final int hosts = Integer.parseInt(args[1]);
        final int vms = Integer.parseInt(args[2]);
        final double hours = args.length > 3 ? Double.parseDouble(args[3]) : 24.0;
        new PlanetLabPeer().run(dir, hosts, vms, hours * 3600.0);
    }

    private static List<double[]> readTraces(final Path dir) throws IOException {
        final List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            // String order = UTF-16 code-unit order = byte order for these ASCII names (Python's sorted())
            files = s.filter(Files::isRegularFile).sorted((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString())).toList();
        }
        final List<double[]> out = new ArrayList<>(files.size());
        for (final Path f : files) {
            final List<String> lines = Files.readAllLines(f, StandardCharsets.US_ASCII);
            final double[] u = lines.stream().map(String::trim).filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .mapToDouble(l -> Double.parseDouble(l) / 100.0).toArray();
            out.add(u);
        }
        return out;
    }

    private void run(final Path traceDir, final int nHosts, final int nVms, final double horizonS) throws IOException {
        Log.setLevel(Level.WARN); // per-event INFO logging would dominate the run time
        final long t0 = System.nanoTime();
        final List<double[]> traces = readTraces(traceDir);

        final CloudSimPlus sim = new CloudSimPlus();
        final List<Host> hostList = new ArrayList<>(nHosts);
        for (int h = 0; h < nHosts; h++) {
            final List<Pe> pes = new ArrayList<>(HOST_PES);
            for (int p = 0; p < HOST_PES; p++) {
                pes.add(new PeSimple(PE_MIPS));
            }
            final Host host = new HostSimple(HOST_RAM_MB, 1_000_000L, 10_000_000L, pes);
            host.setVmScheduler(new VmSchedulerTimeShared());
            host.setPowerModel(new PowerModelHostSimple(PEAK_W, IDLE_W));
            host.enableUtilizationStats();
            hostList.add(host);
        }
        final DatacenterSimple dc = new DatacenterSimple(sim, hostList, new VmAllocationPolicyFirstFit());
        dc.setSchedulingInterval(STEP_S);

        final DatacenterBroker broker = new DatacenterBrokerSimple(sim);
        final List<Vm> vmList = new ArrayList<>(nVms);
        final List<Cloudlet> cloudlets = new ArrayList<>(nVms);
        for (int i = 0; i < nVms; i++) {
            final Vm vm = new VmSimple(PE_MIPS, VM_PES, new CloudletSchedulerTimeShared());
            vm.setRam(VM_RAM_MB).setBw(1000).setSize(10_000);
            vmList.add(vm);
            final double[] u = traces.get(i % traces.size());
            final var cpu = new UtilizationModelPlanetLab(u, STEP_S, UnaryOperator.identity());
            // long enough never to finish within the horizon (2 PEs x 1,000 MIPS x 24 h = 1.7e8 MI)
            final Cloudlet c = new CloudletSimple(1_000_000_000_000L, VM_PES, cpu);
            c.setUtilizationModelRam(new UtilizationModelDynamic(0.0));
            c.setUtilizationModelBw(new UtilizationModelDynamic(0.0));
            c.setVm(vm);
            cloudlets.add(c);
        }
        broker.submitVmList(vmList);
        broker.submitCloudletList(cloudlets);

        hostEnergyJ = new double[nHosts];
        hostLastUtil = new double[nHosts];
        lastTick = 0.0;
        sim.addOnClockTickListener(info -> integrate(hostList, Math.min(info.getTime(), horizonS)));
        sim.terminateAt(horizonS);
        final long tBuilt = System.nanoTime();
        sim.start();
        integrate(hostList, horizonS);
        final long tEnd = System.nanoTime();

        double energyJ = 0;
        double energyStatsJ = 0;
        for (int h = 0; h < nHosts; h++) {
            energyJ += hostEnergyJ[h];
            final Host host = hostList.get(h);
            final double mean = host.getCpuUtilizationStats().getMean();
            energyStatsJ += host.getPowerModel().getPower(Double.isNaN(mean) ? 0.0 : mean) * horizonS;
        }
        final Runtime rt = Runtime.getRuntime();
        System.out.println(String.format(Locale.ROOT,
            "{\"simulator\":\"cloudsimplus\",\"version\":\"8.5.7\",\"hosts\":%d,\"vms\":%d,\"placed_vms\":%d,"
                + "\"hosts_with_vms\":%d,\"setup_s\":%.3f,\"run_s\":%.3f,\"wall_s\":%.3f,\"energy_kwh\":%.6f,"
                + "\"energy_stats_mean_kwh\":%.6f,\"clock_s\":%.1f,\"heap_used_mib\":%.1f,\"clock_ticks\":%d}",
            nHosts, nVms, maxPlacedVms, maxHostsWithVms, (tBuilt - t0) / 1e9, (tEnd - tBuilt) / 1e9, (tEnd - t0) / 1e9,
            energyJ / 3.6e6, energyStatsJ / 3.6e6, sim.clock(), (rt.totalMemory() - rt.freeMemory()) / 1048576.0, ticks));
    }

    /** Add P(u) x dt for every host since the last tick, then remember the utilisation now allocated. */
    private void integrate(final List<Host> hosts, final double now) {
        ticks++;
        final double dt = now - lastTick;
        if (dt > 0) {
            for (int h = 0; h < hosts.size(); h++) {
                hostEnergyJ[h] += (IDLE_W + (PEAK_W - IDLE_W) * hostLastUtil[h]) * dt;
            }
            lastTick = now;
        }
        int used = 0;
        int placed = 0;
        for (int h = 0; h < hosts.size(); h++) {
            final Host host = hosts.get(h);
            hostLastUtil[h] = Math.min(1.0, host.getCpuPercentUtilization());
            final int n = host.getVmList().size();
            placed += n;
            used += n > 0 ? 1 : 0;
        }
        maxHostsWithVms = Math.max(maxHostsWithVms, used);
        maxPlacedVms = Math.max(maxPlacedVms, placed);
    }
}
