// Dumps the Java serialization class descriptors of Spark's classes as JSON (see scripts/spark/classes.sh).
//
//   java -cp 'SPARK_HOME/jars/*:BUILD' DumpClasses SPARK_VERSION REGENERATE_COMMAND LIST_FILE [NAMES_FILE...]
//        [--optional NAMES_FILE...]
//
// LIST_FILE lines (# starts a comment):
//   scan PREFIX             every serializable class whose jar entry path starts with PREFIX
//   scan1 DIR/              every serializable class directly in DIR/ (not in its subdirectories)
//   exclude PREFIX          no class whose jar entry path starts with PREFIX is scanned
//   class NAME [TAG...]     one class by Class.getName(); with tags, only where one of them matches: a
//                           Spark version (4.0.1) or scala-X.Y (scala-2.13: the class path's scala-library
//                           is 2.13.*)
// NAMES_FILE: one class name per line (the first tab-separated column), every one of which must load.
// After --optional: the same, but a class that does not load (or is not serializable) in this release
// is left out, and counted on stderr.
// The table is closed over super classes and over the declared types of fields: a concrete (or array)
// serializable class named by a field type is in it too.
//
// For every class the descriptor comes from java.io.ObjectStreamClass.lookup, the flags byte is
// computed the way ObjectOutputStream (protocol 2) computes it, and both are checked against the
// bytes ObjectOutputStream actually writes for the class object itself (TC_CLASS, then the
// descriptor chain); any disagreement stops the tool with exit status 1.
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.ByteArrayInputStream;
import java.io.Externalizable;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.ObjectStreamField;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public final class DumpClasses {
  static final int SC_WRITE_METHOD = 0x01;
  static final int SC_SERIALIZABLE = 0x02;
  static final int SC_EXTERNALIZABLE = 0x04;
  static final int SC_BLOCK_DATA = 0x08;
  static final int SC_ENUM = 0x10;

  static final ClassLoader LOADER = DumpClasses.class.getClassLoader();
  static final List<String> skipped = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: DumpClasses SPARK_VERSION REGENERATE_COMMAND LIST_FILE [NAMES_FILE...] [--optional NAMES_FILE...]");
      System.exit(2);
    }
    // Looking classes up can run Spark's static initializers, and some of them log (Spark 3.3+ to
    // the standard output): the table alone goes to the real standard output, the rest to stderr.
    java.io.PrintStream stdout = System.out;
    System.setOut(System.err);
    String sparkVersion = args[0];
    String regenerate = args[1];
    List<String> scan = new ArrayList<>();
    List<String> scan1 = new ArrayList<>();
    List<String> exclude = new ArrayList<>();
    TreeSet<String> required = new TreeSet<>();
    TreeSet<String> optional = new TreeSet<>();
    String scala = scalaVersion();
    String scalaTag = scala == null ? null : "scala-" + scala.replaceAll("^(\\d+\\.\\d+).*", "$1");
    for (String raw : Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8)) {
      String line = raw.replaceAll("#.*", "").trim();
      if (line.isEmpty()) continue;
      String[] w = line.split("\\s+");
      switch (w[0]) {
        case "scan": scan.add(w[1]); break;
        case "scan1": scan1.add(w[1]); break;
        case "exclude": exclude.add(w[1]); break;
        case "class":
          List<String> tags = Arrays.asList(w).subList(2, w.length);
          if (tags.isEmpty() || tags.contains(sparkVersion) || (scalaTag != null && tags.contains(scalaTag))) required.add(w[1]);
          break;
        default: throw new IllegalArgumentException(args[2] + ": unknown directive: " + raw);
      }
    }
    boolean opt = false;
    for (int i = 3; i < args.length; i++) {
      if (args[i].equals("--optional")) {
        opt = true;
        continue;
      }
      for (String raw : Files.readAllLines(Paths.get(args[i]), StandardCharsets.UTF_8)) {
        String line = raw.replaceAll("#.*", "").trim();
        if (!line.isEmpty()) (opt ? optional : required).add(line.split("\t")[0].trim());
      }
    }
    optional.removeAll(required);

    TreeMap<String, Class<?>> classes = new TreeMap<>();
    Deque<Class<?>> todo = new ArrayDeque<>();
    int scanned = 0;
    for (String entry : jarEntries()) {
      boolean in = false;
      for (String p : scan) in |= entry.startsWith(p);
      for (String d : scan1) in |= entry.startsWith(d) && entry.indexOf('/', d.length()) < 0;
      for (String x : exclude) in &= !entry.startsWith(x);
      if (!in) continue;
      scanned++;
      String name = entry.substring(0, entry.length() - ".class".length()).replace('/', '.');
      Class<?> cls;
      try {
        cls = Class.forName(name, false, LOADER);
      } catch (Throwable t) {
        skipped.add(name + " (does not load: " + t + ")");
        continue;
      }
      todo.add(cls);
    }
    for (String name : required) {
      Class<?> cls;
      try {
        cls = Class.forName(name, false, LOADER);
      } catch (Throwable t) {
        throw new IllegalStateException("required class " + name + " does not load: " + t, t);
      }
      if (lookup(cls) == null) throw new IllegalStateException("required class " + name + " is not serializable");
      todo.add(cls);
    }
    int absent = 0;
    for (String name : optional) {
      Class<?> cls;
      try {
        cls = Class.forName(name, false, LOADER);
      } catch (Throwable t) {
        absent++;
        continue;
      }
      if (lookup(cls) == null) {
        absent++;
        continue;
      }
      todo.add(cls);
    }
    while (!todo.isEmpty()) {
      Class<?> cls = todo.poll();
      if (classes.containsKey(cls.getName()) || cls.isInterface() || Modifier.isInterface(cls.getModifiers())) continue;
      if (cls.isPrimitive() || java.lang.reflect.Proxy.isProxyClass(cls)) continue;
      ObjectStreamClass desc = lookup(cls);
      if (desc == null) continue;
      classes.put(cls.getName(), cls);
      Class<?> sup = cls.getSuperclass();
      if (sup != null && lookup(sup) != null) todo.add(sup);
      for (ObjectStreamField f : desc.getFields()) {
        Class<?> t = f.getType();
        if (t == Object.class) {
          // getType() is Object for every object field of a descriptor read from a stream, but a lookup
          // descriptor has the declared type; resolve from the type string to be sure.
          t = fromTypeString(f.getTypeString());
        }
        if (t != null && !t.isPrimitive()) todo.add(t);
      }
    }

    StringBuilder out = new StringBuilder();
    out.append("{\n");
    out.append("  \"spark\": ").append(q(sparkVersion)).append(",\n");
    out.append("  \"java\": ").append(q(System.getProperty("java.version"))).append(",\n");
    out.append("  \"regenerate\": ").append(q(regenerate)).append(",\n");
    out.append("  \"classes\": [");
    boolean first = true;
    for (Map.Entry<String, Class<?>> e : classes.entrySet()) {
      Class<?> cls = e.getValue();
      ObjectStreamClass desc = lookup(cls);
      int flags = flags(cls);
      ObjectStreamField[] fields = desc.getFields();
      Class<?> sup = cls.getSuperclass();
      String superName = (sup != null && lookup(sup) != null) ? sup.getName() : null;
      verify(cls, desc, flags, fields, superName);
      out.append(first ? "\n" : ",\n");
      first = false;
      out.append("    { \"name\": ").append(q(cls.getName()));
      out.append(",\n      \"suid\": ").append(q(Long.toString(desc.getSerialVersionUID())));
      out.append(",\n      \"flags\": ").append(flags);
      out.append(",\n      \"fields\": [");
      for (int i = 0; i < fields.length; i++) {
        ObjectStreamField f = fields[i];
        out.append(i == 0 ? "" : ",\n                  ");
        out.append("{\"type\": ").append(q(String.valueOf(f.getTypeCode())));
        out.append(", \"name\": ").append(q(f.getName()));
        if (!f.isPrimitive()) out.append(", \"class\": ").append(q(f.getTypeString()));
        out.append("}");
      }
      out.append("]");
      out.append(",\n      \"super\": ").append(superName == null ? "null" : q(superName)).append(" }");
    }
    out.append("\n  ]\n}\n");
    stdout.print(out);
    stdout.flush();
    System.err.println("DumpClasses " + sparkVersion + " (Scala " + scala + "): " + scanned + " class files scanned, "
        + required.size() + " classes listed, " + optional.size() + " listed as optional (" + absent
        + " of them not in this release), " + classes.size() + " serializable classes written, "
        + skipped.size() + " class files that do not load skipped");
    for (String s : skipped) System.err.println("  skipped " + s);
    // Looking classes up runs some of Spark's static initializers, and one of them (BarrierTaskContext)
    // starts a non-daemon timer thread: leave without waiting for it.
    System.exit(0);
  }

  /** The version of the scala-library jar on the class path (2.13.16), or null. */
  static String scalaVersion() {
    for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      String f = Paths.get(p).getFileName() == null ? "" : Paths.get(p).getFileName().toString();
      if (f.startsWith("scala-library-") && f.endsWith(".jar")) {
        return f.substring("scala-library-".length(), f.length() - ".jar".length());
      }
    }
    return null;
  }

  static ObjectStreamClass lookup(Class<?> cls) {
    try {
      return ObjectStreamClass.lookup(cls);
    } catch (Throwable t) {
      skipped.add(cls.getName() + " (no descriptor: " + t + ")");
      return null;
    }
  }

  static Class<?> fromTypeString(String ts) {
    try {
      if (ts.startsWith("[")) return Class.forName(ts.replace('/', '.'), false, LOADER);
      if (ts.startsWith("L") && ts.endsWith(";")) {
        return Class.forName(ts.substring(1, ts.length() - 1).replace('/', '.'), false, LOADER);
      }
    } catch (Throwable t) {
      skipped.add(ts + " (field type does not load: " + t + ")");
    }
    return null;
  }

  /** The classDescFlags byte ObjectOutputStream (protocol 2) writes for cls. */
  static int flags(Class<?> cls) {
    boolean isEnum = Enum.class.isAssignableFrom(cls); // java.lang.Enum itself too, as in ObjectStreamClass
    if (isEnum) return SC_SERIALIZABLE | SC_ENUM;
    if (Externalizable.class.isAssignableFrom(cls) && !cls.isArray()) return SC_EXTERNALIZABLE | SC_BLOCK_DATA;
    int flags = SC_SERIALIZABLE;
    if (!cls.isArray() && hasPrivateWriteObject(cls)) flags |= SC_WRITE_METHOD;
    return flags;
  }

  static boolean hasPrivateWriteObject(Class<?> cls) {
    try {
      Method m = cls.getDeclaredMethod("writeObject", ObjectOutputStream.class);
      int mod = m.getModifiers();
      return m.getReturnType() == Void.TYPE && Modifier.isPrivate(mod) && !Modifier.isStatic(mod);
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** Serializes cls itself and checks the first descriptor in the bytes against what we emit. */
  static void verify(Class<?> cls, ObjectStreamClass desc, int flags, ObjectStreamField[] fields, String superName)
      throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream oos = new ObjectOutputStream(bytes)) {
      oos.writeObject(cls);
    }
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    List<String> handles = new ArrayList<>();
    expect(cls, in.readUnsignedShort() == 0xaced && in.readUnsignedShort() == 5, "stream header");
    expect(cls, in.readUnsignedByte() == 0x76, "TC_CLASS");
    expect(cls, in.readUnsignedByte() == 0x72, "TC_CLASSDESC");
    handles.add(null);
    String name = in.readUTF();
    long suid = in.readLong();
    int wflags = in.readUnsignedByte();
    int n = in.readUnsignedShort();
    expect(cls, name.equals(cls.getName()), "name " + name);
    expect(cls, suid == desc.getSerialVersionUID(), "suid " + suid + " != " + desc.getSerialVersionUID());
    expect(cls, wflags == flags, "flags written " + wflags + " != computed " + flags);
    expect(cls, n == fields.length, "field count " + n + " != " + fields.length);
    for (int i = 0; i < n; i++) {
      char code = (char) in.readUnsignedByte();
      String fname = in.readUTF();
      ObjectStreamField f = fields[i];
      expect(cls, code == f.getTypeCode() && fname.equals(f.getName()), "field " + i + " " + code + " " + fname);
      if (code == 'L' || code == '[') {
        int tag = in.readUnsignedByte();
        String ts;
        if (tag == 0x74) {
          ts = in.readUTF();
          handles.add(ts);
        } else {
          expect(cls, tag == 0x71, "field type string tag " + tag);
          ts = handles.get(in.readInt() - 0x7e0000);
        }
        expect(cls, ts.equals(f.getTypeString()), "field " + fname + " type " + ts + " != " + f.getTypeString());
      }
    }
    expect(cls, in.readUnsignedByte() == 0x78, "TC_ENDBLOCKDATA after the class annotation");
    int tag = in.readUnsignedByte();
    if (superName == null) {
      expect(cls, tag == 0x70, "TC_NULL super, got tag " + tag);
    } else {
      expect(cls, tag == 0x72, "TC_CLASSDESC super, got tag " + tag);
      String s = in.readUTF();
      expect(cls, s.equals(superName), "super " + s + " != " + superName);
    }
  }

  static void expect(Class<?> cls, boolean ok, String what) {
    if (!ok) {
      System.err.println("DumpClasses: MISMATCH for " + cls.getName() + ": " + what);
      System.exit(1);
    }
  }

  static List<String> jarEntries() throws IOException {
    TreeSet<String> names = new TreeSet<>();
    for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      if (!p.endsWith(".jar")) continue;
      Path path = Paths.get(p);
      if (!Files.isRegularFile(path)) continue;
      try (JarFile jar = new JarFile(path.toFile())) {
        Enumeration<JarEntry> it = jar.entries();
        while (it.hasMoreElements()) {
          String n = it.nextElement().getName();
          if (n.endsWith(".class") && !n.endsWith("module-info.class") && !n.endsWith("package-info.class")
              && !n.startsWith("META-INF/")) {
            names.add(n);
          }
        }
      }
    }
    return new ArrayList<>(names);
  }

  static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  private DumpClasses() {}
}
