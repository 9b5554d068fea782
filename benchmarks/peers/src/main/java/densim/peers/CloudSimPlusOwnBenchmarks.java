package densim.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import ch.qos.logback.classic.Level;

import org.cloudsimplus.allocationpolicies.VmAllocationPolicyFirstFit;
import org.cloudsimplus.brokers.DatacenterBroker;
import org.cloudsimplus.brokers.DatacenterBrokerSimple;
import org.cloudsimplus.cloudlets.Cloudlet;
import org.cloudsimplus.cloudlets.CloudletSimple;
import org.cloudsimplus.core.CloudSimPlus;
import org.cloudsimplus.datacenters.DatacenterSimple;
import org.cloudsimplus.distributions.UniformDistr;
import org.cloudsimplus.hosts.Host;
import org.cloudsimplus.hosts.HostSimple;
import org.cloudsimplus.resources.Pe;
import org.cloudsimplus.resources.PeSimple;
import org.cloudsimplus.schedulers.cloudlet.CloudletSchedulerSpaceShared;
import org.cloudsimplus.schedulers.cloudlet.CloudletSchedulerTimeShared;
import org.cloudsimplus.schedulers.vm.VmSchedulerTimeShared;
import org.cloudsimplus.util.Log;
import org.cloudsimplus.utilizationmodels.UtilizationModelDynamic;
import org.cloudsimplus.utilizationmodels.UtilizationModelFull;
import org.cloudsimplus.utilizationmodels.UtilizationModelStochastic;
import org.cloudsimplus.vms.Vm;
import org.cloudsimplus.vms.VmSimple;

/**
 * CloudSim Plus's own published benchmarks, set up as CloudSim Plus sets them up, for densim's peer comparison.
 *
 * <ul>
 * <li>{@code pr341}: the scenario of CloudSim Plus pull request #341 ("Fix #338 :: 45% performance improvement",
 * https://github.com/cloudsimplus/cloudsimplus/pull/341: 6.38 min on 6.5.0, 3.86 simulated months, 100,000 finished
 * cloudlets), whose code is {@code PerformanceExample} (cloudsim-plus-examples at tag v6.5.0), kept as
 * {@code performance/PerformanceExample1} in cloudsimplus/cloudsimplus-examples. 50,000 hosts of 64 PEs x 1,000 MIPS,
 * 2,048 MB RAM, 10,000 Mb/s, 1,000,000 MB storage, VmSchedulerTimeShared; 100,000 VMs of 4 PEs x 1,000 MIPS, 512 MB,
 * 1,000 Mb/s, 10,000 MB, CloudletSchedulerTimeShared; one cloudlet per VM: 10,000,000,000 MI on 2 PEs, file and
 * output 1,024 MB, CPU UtilizationModelFull, RAM and BW UtilizationModelDynamic(0.2); VmAllocationPolicyFirstFit;
 * scheduling interval 1 h; log level WARN.</li>
 * <li>{@code perfpage}: the scenario of CloudSim Plus's docs/performance.md ("Cloudlet's UtilizationModel" table,
 * 20,000 hosts / 40,000 VMs / 50,000 cloudlets, FirstFit: 2.4 min on CloudSim Plus 4.3.5), defined by
 * scenario6.yml of cloudsimplus/cloud-simulation-comparison and built by CloudSim Plus Automation
 * (CloudSimulation.java): 20,000 hosts of 8 PEs x 50,000 MIPS, 1,000,000 MB RAM, 100,000 Mb/s, 1,200,000 MB storage,
 * VmSchedulerTimeShared; 40,000 VMs of 4 PEs x 1,000 MIPS, 2,000 MB, 1,000 Mb/s, 500 MB, CloudletSchedulerSpaceShared;
 * 50,000 cloudlets of 10,000 MI on 2 PEs, file 50 / output 70 MB, CPU UtilizationModelStochastic, RAM and BW
 * UtilizationModelFull, mapped to VMs by DatacenterBrokerSimple's default (cyclic) mapper; VmAllocationPolicyFirstFit;
 * scheduling interval 0 (the registry's default); no migration. The stochastic models are seeded (seed + cloudlet
 * id) so a run can be repeated; the YAML leaves the seed to the clock.</li>
 * </ul>
 *
 * <p>Neither scenario gives the hosts a power model. For the comparison with densim, energy is derived afterwards
 * from CloudSim Plus's own results, without touching the run: every host is on for the whole simulated time
 * (CloudSim Plus hosts are active from the start) and draws a linear 100 W idle to 250 W peak in its CPU
 * utilisation, so its energy is {@code 100 W x T + 150 W x (MI executed on it) / (its MIPS capacity)}.</p>
 *
 * <p>Usage: {@code java -cp target/cloudsimplus-peer-1.0.jar:target/lib/* densim.peers.CloudSimPlusOwnBenchmarks
 * pr341|perfpage HOSTS VMS CLOUDLETS [SEED]}. Prints one JSON line.</p>
 */
public final class CloudSimPlusOwnBenchmarks {
    static final double IDLE_W = 100;
    static final double PEAK_W = 250;

    private final String scenario;
    private final int nHosts;
    private final int nVms;
    private final int nCloudlets;
    private final long seed;
    private int[] vmHost;

    private CloudSimPlusOwnBenchmarks(final String scenario, final int hosts, final int vms, final int cloudlets, final long seed) {
        this.scenario = scenario;
        this.nHosts = hosts;
        this.nVms = vms;
        this.nCloudlets = cloudlets;
        this.seed = seed;
    }

    public static void main(final String[] args) {
        if (args.length < 4 || !(args[0].equals("pr341") || args[0].equals("perfpage"))) {
            System.err.println("usage: CloudSimPlusOwnBenchmarks pr341|perfpage HOSTS VMS CLOUDLETS [SEED]");
            System.exit(2);
        }
        final long seed = args.length > 4 ? Long.parseLong(args[4]) : 42L;
        new CloudSimPlusOwnBenchmarks(args[0], Integer.parseInt(args[1]), Integer.parseInt(args[2]),
            Integer.parseInt(args[3]), seed).run();
    }

    private boolean pr341() {
        return scenario.equals("pr341");
    }

    private Host createHost() {
        final int pes = pr341() ? 64 : 8;
        final double mips = pr341() ? 1000 : 50_000;
        final List<Pe> peList = new ArrayList<>(pes);
        for (int i = 0; i < pes; i++) {
            peList.add(new PeSimple(mips));
        }
        final Host host = pr341()
            ? new HostSimple(2048, 10_000, 1_000_000, peList)
            : new HostSimple(1_000_000, 100_000, 1_200_000, peList);
        host.setVmScheduler(new VmSchedulerTimeShared());
        return host;
    }

    private Vm createVm(final int id) {
        final Vm vm = new VmSimple(id, 1000, 4);
        if (pr341()) {
            vm.setCloudletScheduler(new CloudletSchedulerTimeShared()).setRam(512).setBw(1000).setSize(10_000);
        } else {
            vm.setCloudletScheduler(new CloudletSchedulerSpaceShared()).setRam(2000).setBw(1000).setSize(500);
        }
        vm.addOnHostAllocationListener(info -> vmHost[(int) info.getVm().getId()] = (int) info.getHost().getId());
        return vm;
    }

    private Cloudlet createCloudlet(final int id, final List<Vm> vms) {
        if (pr341()) {
            final var ramBw = new UtilizationModelDynamic(0.2);
            return new CloudletSimple(id, 10_000_000_000L, 2)
                .setFileSize(1024).setOutputSize(1024)
                .setUtilizationModelBw(ramBw).setUtilizationModelRam(ramBw)
                .setUtilizationModelCpu(new UtilizationModelFull())
                .setVm(vms.get(id));
        }
        return new CloudletSimple(id, 10_000, 2)
            .setFileSize(50).setOutputSize(70)
            .setUtilizationModelCpu(new UtilizationModelStochastic(new UniformDistr(seed + id)))
            .setUtilizationModelRam(new UtilizationModelFull())
            .setUtilizationModelBw(new UtilizationModelFull());
    }

    private void run() {
        Log.setLevel(pr341() ? Level.WARN : Level.OFF); // the Automation tool runs with its log off
        final long t0 = System.nanoTime();
        final CloudSimPlus sim = new CloudSimPlus();
        final List<Host> hostList = new ArrayList<>(nHosts);
        for (int h = 0; h < nHosts; h++) {
            hostList.add(createHost());
        }
        final DatacenterSimple dc = new DatacenterSimple(sim, hostList, new VmAllocationPolicyFirstFit());
        dc.setSchedulingInterval(pr341() ? 3600 : 0);
        final DatacenterBroker broker = new DatacenterBrokerSimple(sim);
        vmHost = new int[nVms];
        java.util.Arrays.fill(vmHost, -1);
        final List<Vm> vms = new ArrayList<>(nVms);
        for (int i = 0; i < nVms; i++) {
            vms.add(createVm(i));
        }
        final List<Cloudlet> cloudlets = new ArrayList<>(nCloudlets);
        for (int i = 0; i < nCloudlets; i++) {
            cloudlets.add(createCloudlet(i, vms));
        }
        broker.submitVmList(vms);
        broker.submitCloudletList(cloudlets);
        final long tBuilt = System.nanoTime();
        sim.start();
        final long tEnd = System.nanoTime();

        // results, read after the timed part
        final double end = sim.clock();
        final double[] hostMi = new double[nHosts];
        double finishedMi = 0;
        double maxFinish = 0;
        double sumFinish = 0;
        int finished = 0;
        for (final Cloudlet c : cloudlets) {
            final double mi = (double) c.getFinishedLengthSoFar() * c.getPesNumber();
            finishedMi += mi;
            final int h = vmHost[(int) c.getVm().getId()];
            if (h >= 0) {
                hostMi[h] += mi;
            }
            if (System.getenv("PEER_DEBUG") != null && !c.isFinished()) {
                System.err.println(c + " " + c.getStatus() + " vm=" + c.getVm() + " start=" + c.getStartTime() + " done=" + c.getFinishedLengthSoFar());
            }
            if (c.isFinished()) {
                finished++;
                maxFinish = Math.max(maxFinish, c.getFinishTime());
                sumFinish += c.getFinishTime();
            }
        }
        final boolean[] used = new boolean[nHosts];
        int vmsPlaced = 0;
        int hostsUsed = 0;
        for (final int h : vmHost) {
            if (h >= 0) {
                vmsPlaced++;
                if (!used[h]) {
                    used[h] = true;
                    hostsUsed++;
                }
            }
        }
        double energyJ = 0;
        for (int h = 0; h < nHosts; h++) {
            final double capMips = hostList.get(h).getTotalMipsCapacity();
            energyJ += IDLE_W * end + (PEAK_W - IDLE_W) * hostMi[h] / capMips;
        }
        final Runtime rt = Runtime.getRuntime();
        System.out.println(String.format(Locale.ROOT,
            "{\"simulator\":\"cloudsimplus\",\"version\":\"8.5.7\",\"version_constant\":\"%s\",\"built_from\":\"org.cloudsimplus:cloudsimplus:8.5.7:sources\",\"scenario\":\"%s\","
                + "\"hosts\":%d,\"vms\":%d,\"cloudlets\":%d,\"vms_placed\":%d,\"hosts_used\":%d,"
                + "\"cloudlets_finished\":%d,\"finished_mi\":%.6e,\"simulated_end_s\":%.6f,\"last_finish_s\":%.6f,"
                + "\"mean_finish_s\":%.6f,\"energy_kwh\":%.6f,\"setup_s\":%.3f,\"run_s\":%.3f,\"wall_s\":%.3f,"
                + "\"heap_used_mib\":%.1f}",
            CloudSimPlus.VERSION, scenario, nHosts, nVms, nCloudlets, vmsPlaced, hostsUsed, finished, finishedMi, end,
            maxFinish, finished > 0 ? sumFinish / finished : Double.NaN, energyJ / 3.6e6, (tBuilt - t0) / 1e9,
            (tEnd - tBuilt) / 1e9, (tEnd - t0) / 1e9, (rt.totalMemory() - rt.freeMemory()) / 1048576.0));
    }
}
