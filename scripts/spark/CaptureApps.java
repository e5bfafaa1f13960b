// Small JVM programs scripts/spark/capture.sh runs on real Spark to put messages on the wire.
// Compiled against the jars of the Spark version being captured (javac --release 11).
//
//   CaptureApps$Driver MODE [ARG]      a cluster-mode driver: `run` (a 4-task job, then exit 0),
//                                      `sleep SECONDS` (the job, then sleep: to be killed),
//                                      `fail-once MARKER` (exit 3 when MARKER does not exist, after
//                                      creating it; otherwise `run`): the worker relaunches a
//                                      supervised driver that exits non-zero.
//   CaptureApps$Probe HOST PORT REQ... asks the master at HOST:PORT over Spark's own RPC client, with
//                                      Spark's own message classes, and prints each reply. REQ:
//                                      state | status:DRIVER_ID | kill:DRIVER_ID | killall | clear |
//                                      readyz | decommission-hosts:HOST | same-address:PORT
//                                      (same-address sends a RegisterWorker with a new worker id whose
//                                      worker ref is spark://Worker@HOST:PORT, the address of a worker
//                                      that is registered and alive: the master refuses it with
//                                      RegisterWorkerFailed, which it sends to that address.)
//                                      (Spark's web UI and REST server send these to the master
//                                      locally; this puts them and their replies on the wire.)
//   CaptureApps$ModuleOptions          prints Spark's own JVM module options for Java 17
//                                      (org.apache.spark.launcher.JavaModuleOptions, Spark 3.3 and
//                                      later; nothing for a release without them): capture.sh gives
//                                      them to cluster-mode drivers, which a 3.x worker launches
//                                      without them.
//   CaptureApps$StandbyFactory         spark.deploy.recoveryMode=CUSTOM factory whose leader election
//                                      never elects: the master stays in STANDBY and refuses
//                                      workers (MasterInStandby) and driver submissions.
import java.io.File;
import java.lang.reflect.Constructor;
import java.util.Arrays;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.deploy.master.BlackHolePersistenceEngine;
import org.apache.spark.deploy.master.LeaderElectable;
import org.apache.spark.deploy.master.LeaderElectionAgent;
import org.apache.spark.deploy.master.PersistenceEngine;
import org.apache.spark.deploy.master.StandaloneRecoveryModeFactory;
import org.apache.spark.rpc.RpcAddress;
import org.apache.spark.rpc.RpcEndpointRef;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.serializer.Serializer;

public final class CaptureApps {
  private CaptureApps() {}

  public static final class Driver {
    public static void main(String[] args) throws Exception {
      String mode = args.length > 0 ? args[0] : "run";
      if (mode.equals("fail-once")) {
        File marker = new File(args[1]);
        if (marker.createNewFile()) {
          System.err.println("CaptureApps: first launch, exiting with status 3");
          System.exit(3);
        }
      }
      JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("capture-" + mode));
      long n = sc.parallelize(Arrays.asList(1, 2, 3, 4), 2).count();
      System.err.println("CaptureApps: count = " + n);
      if (mode.equals("sleep")) Thread.sleep(Long.parseLong(args[1]) * 1000L);
      sc.stop();
    }
  }

  public static final class Probe {
    public static void main(String[] args) throws Exception {
      SparkConf conf = new SparkConf();
      org.apache.spark.SecurityManager sm = new org.apache.spark.SecurityManager(conf,
          org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$2(),
          org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3());
      RpcEnv env = RpcEnv.create("capture-probe", "127.0.0.1", 0, conf, sm, true);
      try {
        RpcEndpointRef master = env.setupEndpointRef(new RpcAddress(args[0], Integer.parseInt(args[1])), "Master");
        for (int i = 2; i < args.length; i++) {
          if (args[i].startsWith("same-address:")) {
            int port = Integer.parseInt(args[i].substring("same-address:".length()));
            master.send(sameAddressRegistration(env, args[0], port, new RpcAddress(args[0], Integer.parseInt(args[1]))));
            System.out.println(args[i] + " -> sent RegisterWorker(worker-probe-same-address, " + args[0] + ":" + port + ")");
            Thread.sleep(2000);
            continue;
          }
          Object msg = message(args[i]);
          Object reply = master.askSync(msg, scala.reflect.ClassTag$.MODULE$.apply(Object.class));
          String text = String.valueOf(reply);
          System.out.println(args[i] + " -> " + (text.length() > 300 ? text.substring(0, 300) + "..." : text));
        }
      } finally {
        env.shutdown();
        env.awaitTermination();
      }
    }

    static Object message(String req) throws Exception {
      String p = "org.apache.spark.deploy.DeployMessages$";
      int colon = req.indexOf(':');
      String arg = colon < 0 ? null : req.substring(colon + 1);
      switch (colon < 0 ? req : req.substring(0, colon)) {
        case "state": return module(p + "RequestMasterState$");
        case "killall": return module(p + "RequestKillAllDrivers$");
        case "clear": return module(p + "RequestClearCompletedDriversAndApps$");
        case "readyz": return module(p + "RequestReadyz$");
        case "status": return construct(p + "RequestDriverStatus", arg);
        case "kill": return construct(p + "RequestKillDriver", arg);
        case "decommission-hosts":
          return construct(p + "DecommissionWorkersOnHosts",
              scala.collection.JavaConverters.asScalaBufferConverter(Arrays.asList(arg.split(","))).asScala().toList());
        default: throw new IllegalArgumentException("unknown request " + req);
      }
    }

    /** RegisterWorker(id, host, port, worker, cores, memory, workerWebUiUrl, masterAddress, resources). */
    static Object sameAddressRegistration(RpcEnv env, String host, int port, RpcAddress masterAddress) throws Exception {
      Object ref = new org.apache.spark.rpc.netty.NettyRpcEndpointRef(new SparkConf(),
          new org.apache.spark.rpc.RpcEndpointAddress(new RpcAddress(host, port), "Worker"),
          (org.apache.spark.rpc.netty.NettyRpcEnv) env);
      Constructor<?>[] cs = Class.forName("org.apache.spark.deploy.DeployMessages$RegisterWorker").getConstructors();
      Class<?>[] types = cs[0].getParameterTypes();
      if (cs.length != 1 || types.length != 9 || types[0] != String.class || types[2] != Integer.TYPE
          || types[4] != Integer.TYPE || types[7] != RpcAddress.class) {
        throw new IllegalStateException("unexpected RegisterWorker constructor: " + Arrays.toString(types));
      }
      return cs[0].newInstance("worker-probe-same-address", host, port, ref, 1, 512,
          "http://" + host + ":1", masterAddress, scala.collection.immutable.Map$.MODULE$.empty());
    }

    static Object module(String name) throws Exception {
      return Class.forName(name).getField("MODULE$").get(null);
    }

    static Object construct(String name, Object arg) throws Exception {
      Constructor<?>[] cs = Class.forName(name).getConstructors();
      return cs[0].newInstance(arg);
    }
  }

  public static final class ModuleOptions {
    public static void main(String[] args) throws Exception {
      Class<?> c;
      try {
        c = Class.forName("org.apache.spark.launcher.JavaModuleOptions");
      } catch (ClassNotFoundException e) {
        return;
      }
      System.out.println(c.getMethod("defaultModuleOptions").invoke(null));
    }
  }

  public static final class StandbyFactory extends StandaloneRecoveryModeFactory {
    public StandbyFactory(SparkConf conf, Serializer serializer) {
      super(conf, serializer);
    }

    @Override
    public PersistenceEngine createPersistenceEngine() {
      return new BlackHolePersistenceEngine();
    }

    @Override
    public LeaderElectionAgent createLeaderElectionAgent(LeaderElectable master) {
      return new LeaderElectionAgent() {
        @Override
        public LeaderElectable masterInstance() {
          return master;
        }

        @Override
        public void stop() {}
      };
    }
  }
}
